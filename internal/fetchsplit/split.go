package fetchsplit

import (
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Basis says how a fetch's purgatory was told apart from the rest of its
// wait.
type Basis string

// The bases, from the most to the least certain.
const (
	// BasisNoWait: the fetch asked for no wait (max_wait_ms or
	// min_bytes 0).
	BasisNoWait Basis = "no-wait"
	// BasisNoData: fewer than min_bytes came back: the broker held it
	// for data that was not there, up to max_wait_ms.
	BasisNoData Basis = "no-data"
	// BasisDataThere: the capture shows its data there before the broker
	// could read the fetch: it had nothing to wait for.
	BasisDataThere Basis = "data-there"
	// BasisDataArrived: the capture shows when its data became available
	// (a produce answered, another fetch's high watermark): it waited
	// until then.
	BasisDataArrived Basis = "data-arrived"
	// BasisAssumed: data came back and the capture shows nothing of when
	// it became available: the wait up to max_wait_ms is taken for
	// purgatory.
	BasisAssumed Basis = "assumed"
)

// Bases lists the bases in order.
func Bases() []Basis {
	return []Basis{BasisNoWait, BasisNoData, BasisDataThere, BasisDataArrived, BasisAssumed}
}

// Split is one fetch's time, in milliseconds. TotalMs = PurgatoryMs +
// OtherMs + ReadingMs + SendingMs.
type Split struct {
	TotalMs     float64 `json:"total_ms"`
	PurgatoryMs float64 `json:"purgatory_ms"`
	OtherMs     float64 `json:"other_ms"`
	// ReadingMs is the network thread's reading for the response, DiskMs
	// the part of it that came from disk: known from a recording's traces
	// only (0 otherwise, the reading then part of SendingMs).
	ReadingMs float64 `json:"reading_ms"`
	DiskMs    float64 `json:"disk_ms"`
	SendingMs float64 `json:"sending_ms"`
	// AbnormalMs is the part that makes a fetch slow: OtherMs, DiskMs and
	// the sending (with reading from the page cache) beyond what the
	// response's bytes take at Options.SendRate.
	AbnormalMs float64 `json:"abnormal_ms"`
	Basis      Basis   `json:"purgatory_basis"`
}

// Reading is what a recording's traces say of a fetch's reads: how long
// the network thread read for its response, and how much of that it
// waited for the disk.
type Reading struct {
	Ns, DiskNs int64
}

// times are a fetch's moments as the wire gives them (unix ns).
type times struct {
	arrival, brokerStart, respStart, end int64
}

// timesOf places a fetch's moments: the broker could read it BrokerMs
// before its end, its response began ResponseMs before. Values a damaged
// or hostile capture can put there are clipped into the request's span.
func timesOf(r *event.Request) times {
	a, e := r.Arrival.UnixNano(), r.End.UnixNano()
	t := times{arrival: a, end: e}
	t.respStart = clamp(e-durNs(r.ResponseMs), a, e)
	t.brokerStart = clamp(e-durNs(r.BrokerMs), a, t.respStart)
	return t
}

// split computes the split of a consumer fetch whose data became
// available at avail (avail.known false: the capture does not say).
func (o *Options) split(r *event.Request, t times, av availability, rd Reading) Split {
	maxWait := durNs(float64(r.Fetch.MaxWaitMs))
	brokerWait := t.respStart - t.brokerStart
	var purgatory int64
	basis := BasisNoWait
	switch {
	case r.Fetch.MaxWaitMs <= 0 || r.Fetch.MinBytes <= 0:
	case recordBytes(r) < int64(r.Fetch.MinBytes):
		basis, purgatory = BasisNoData, min(brokerWait, maxWait)
	case !av.known:
		basis, purgatory = BasisAssumed, min(brokerWait, maxWait)
	case av.at <= t.brokerStart:
		basis = BasisDataThere
	default:
		basis, purgatory = BasisDataArrived, min(av.at-t.brokerStart, brokerWait, maxWait)
	}
	send := t.end - t.respStart
	reading := clamp(rd.Ns, 0, send)
	disk := clamp(rd.DiskNs, 0, reading)
	other := t.end - t.arrival - purgatory - send
	expected := int64(float64(r.ResponseBytes) / o.SendRate * 1e9)
	abnormal := other + disk + max(0, send-disk-expected)
	return Split{TotalMs: ms(t.end - t.arrival), PurgatoryMs: ms(purgatory), OtherMs: ms(other), ReadingMs: ms(reading),
		DiskMs: ms(disk), SendingMs: ms(send - reading), AbnormalMs: ms(abnormal), Basis: basis}
}

// recordBytes is what a fetch response returned of record batches: what
// the broker weighs against min_bytes.
func recordBytes(r *event.Request) int64 {
	var n int64
	for i := range r.Partitions {
		p := &r.Partitions[i]
		n += int64(max(p.Bytes, 0))
	}
	return n
}

func durNs(msv float64) int64 {
	// A float beyond int64's range converts to an undefined value: bound
	// it first (a day is beyond any request kscope decodes).
	return int64(min(max(msv, 0), float64(24*time.Hour/time.Millisecond)) * 1e6)
}

func clamp(v, lo, hi int64) int64 { return min(max(v, lo), max(lo, hi)) }

func ms(ns int64) float64 { return float64(ns) / 1e6 }
