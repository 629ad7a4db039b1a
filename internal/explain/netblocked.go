package explain

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// CauseNetworkThreadBlocked: the network thread serving the request's
// connection slept uninterruptibly in the kernel while the request
// waited for it to read the request or send the response: typically
// sendfile for another connection's Fetch reading cold data from disk
// instead of the page cache, which stalls every connection of that thread
// (KAFKA-7504).
const CauseNetworkThreadBlocked = "network-thread-blocked"

func init() {
	register(cause{
		name:  CauseNetworkThreadBlocked,
		order: 70,
		short: "network thread",
		help: "the network thread serving its connection was stuck\n" +
			"elsewhere (a consumer's fetch read from disk by sendfile)",
		// A fetch's own reads from disk are disk-read's.
		after:     []string{CauseDiskRead},
		measure:   func(m *measuring) measured { return m.e.networkThreadBlocked(m.reqCtx, m.f, m.of(CauseDiskRead).ivs) },
		inherited: true,
		// The fetches it was serving then are read from the requests
		// file: only for the requests it names.
		named:  func(m *measuring, _ measured) { m.e.blockingFetches(m.f) },
		detail: func(f *Finding) string { return networkThreadBlockedDetail(f) + alsoDetail(f) },
	})
}

// Evidence bounds.
const (
	maxNetWaitEvidence  = 10
	maxFetchEvidence    = 5
	fetchEvidenceWindow = int64(time.Millisecond) // slack around a wait when looking for the fetch behind it
)

// FetchEvidence is a Fetch request served by the same network thread and
// in progress while that thread was blocked: the fetch it was probably
// sending (the thread's kernel stack says where it slept).
type FetchEvidence struct {
	Client   string `json:"client"`
	ClientID string `json:"client_id"`
	// Group is the consumer group the client's group requests named (""
	// for none seen: a follower, or a consumer without a group).
	Group         string    `json:"group,omitempty"`
	CorrelationID int32     `json:"correlation_id"`
	Arrival       time.Time `json:"arrival"`
	End           time.Time `json:"end"`
	LatencyMs     float64   `json:"latency_ms"`
	ResponseBytes int       `json:"response_bytes"`
	// Unanswered: the capture has no response (its connection closed
	// first, or the capture ended); its partitions are the request's.
	Unanswered bool             `json:"unanswered,omitempty"`
	Partitions []FetchPartition `json:"partitions,omitempty"`
	// DiskReads and DiskReadBytes are the log devices' block reads
	// issued while the fetch was served (from its arrival to its
	// response, or for an unanswered one to the end of the thread's last
	// wait): the page-cache misses it cost, which other fetches in
	// progress then may share. Zero without block traces.
	DiskReads     int   `json:"disk_reads,omitempty"`
	DiskReadBytes int64 `json:"disk_read_bytes,omitempty"`
}

// FetchPartition is one partition of a Fetch response, with the offset
// the fetch read from (nil when the request did not name it: a fetch
// session's unchanged partitions).
type FetchPartition struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	Bytes       int    `json:"bytes"`
	FetchOffset *int64 `json:"fetch_offset,omitempty"`
	// Behind is how far behind the partition's high watermark (in the
	// response) the fetch read: the consumer's lag, a measure of how
	// cold its data was. Nil without both offsets.
	Behind *int64 `json:"behind,omitempty"`
	// AgeMs is how old the data it read was: the response's end minus
	// the first batch's timestamp. Nil without a batch timestamp.
	AgeMs *float64 `json:"age_ms,omitempty"`
}

// networkThreadBlocked measures the time the connection's network thread
// slept uninterruptibly (D state, traced with its kernel stack) while the
// broker had the request, outside the handler's appends (the network
// thread reads the request before them and sends the response after);
// and, while queued on its connection, the time the request ahead was
// held by it. The waits and the Fetch requests the thread was serving
// then are the evidence.
//
// own are the times the thread was reading a fetch's own data (disk-read
// measures them): not elsewhere.
func (e *Explainer) networkThreadBlocked(c *reqCtx, f *Finding, own []interval) measured {
	m := measured{cause: CauseNetworkThreadBlocked}
	if c.netTID != 0 && !slices.Contains(c.handlers, int32(c.netTID)) {
		span := interval{c.netFrom, c.E}
		for _, kw := range e.idx.waitsOverlapping(c.netTID, span.a, span.b) {
			parts := clipAll(minus(interval{kw.Start.UnixNano(), kw.End.UnixNano()}, slices.Concat(c.own, own)), span)
			if len(parts) > 0 {
				m.ivs = append(m.ivs, parts...)
				f.NetworkThreadWaits = append(f.NetworkThreadWaits, kw)
			}
		}
	}
	queued := c.queued[CauseNetworkThreadBlocked]
	m.ivs = append(m.ivs, queued...)
	// The time inherited from the request ahead is the same thread's
	// waits (one connection, one network thread): they are this
	// request's evidence too, and lead to the fetches behind them. A
	// request the broker read only once the thread woke up (pipelined
	// behind one it was reading or answering) has no wait of its own.
	if c.netTID != 0 {
		for _, iv := range queued {
			for _, kw := range e.idx.waitsOverlapping(c.netTID, iv.a, iv.b) {
				if !slices.ContainsFunc(f.NetworkThreadWaits, func(k event.KernelWait) bool { return k.TID == kw.TID && k.Start.Equal(kw.Start) }) {
					f.NetworkThreadWaits = append(f.NetworkThreadWaits, kw)
				}
			}
		}
	}
	m.ns = min(unionLen(m.ivs), c.L)
	slices.SortStableFunc(f.NetworkThreadWaits, func(a, b event.KernelWait) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	f.NetworkThreadWaits = f.NetworkThreadWaits[:min(len(f.NetworkThreadWaits), maxNetWaitEvidence)]
	return m
}

// openFetches gives each unanswered fetch the span it may have been in
// progress: from its arrival to the next fetch of the same fetcher
// (fetchers[i], see fetcherKey), on its connection or another, or
// without end. A consumer that gave up on a response the network thread
// was still reading from disk (its request timed out, or it was closed)
// leaves its fetch unanswered, yet that fetch is what blocked the thread;
// a consumer fetches one at a time, and one that gave up fetches again,
// if at all, on a new connection under the same client id.
func openFetches(fetches []fetchRef, fetchers []string) {
	var open []int
	for i := range fetches {
		if fetches[i].end == 0 {
			open = append(open, i)
		}
	}
	if len(open) == 0 {
		return
	}
	byFetcher := make(map[string][]int64)
	for i, fr := range fetches {
		byFetcher[fetchers[i]] = append(byFetcher[fetchers[i]], fr.arrival)
	}
	for _, arrivals := range byFetcher {
		slices.Sort(arrivals)
	}
	for _, i := range open {
		fr := &fetches[i]
		arrivals := byFetcher[fetchers[i]]
		k, _ := slices.BinarySearch(arrivals, fr.arrival+1)
		fr.end = math.MaxInt64
		if k < len(arrivals) {
			fr.end = arrivals[k]
		}
	}
}

// fetcherKey names who sent a fetch line: the client's address without
// its port, and its client id (members of one group in one process that
// share a client id are one fetcher here: an unanswered fetch's span may
// then end early, never late).
// It appends the key to dst (a buffer reused line after line).
func fetcherKey(dst, client, line []byte) []byte {
	host := client
	if i := bytes.LastIndexByte(client, ':'); i >= 0 {
		host = client[:i]
	}
	key := append(append(dst, host...), ' ')
	const field = `"client_id":"`
	if i := bytes.Index(line, []byte(field)); i >= 0 {
		v := line[i+len(field):]
		if j := bytes.IndexByte(v, '"'); j >= 0 {
			key = append(key, v[:j]...)
		}
	}
	return key
}

// blockingFetches fills f.BlockingFetches: the Fetch requests on
// connections served by the same network thread that were in progress
// during its waits, the largest responses first.
func (e *Explainer) blockingFetches(f *Finding) {
	if f.NetworkThread == nil || len(f.NetworkThreadWaits) == 0 || e.readRequest == nil {
		return
	}
	tid := f.NetworkThread.TID
	var found []fetchRef
	for _, fr := range e.fetches {
		if fr.client == f.Client {
			continue
		}
		for _, kw := range f.NetworkThreadWaits {
			a, b := kw.Start.UnixNano()-fetchEvidenceWindow, kw.End.UnixNano()+fetchEvidenceWindow
			if fr.arrival < b && fr.end > a {
				if ct, ok := e.idx.connThread(fr.client, fr.arrival); ok && ct.TID == tid {
					found = append(found, fr)
				}
				break
			}
		}
	}
	var lastWait int64
	for _, kw := range f.NetworkThreadWaits {
		lastWait = max(lastWait, kw.End.UnixNano())
	}
	for _, fr := range found {
		r, err := e.readRequest(fr.pos)
		if err != nil {
			continue
		}
		fe := FetchEvidence{Client: r.Client, ClientID: r.ClientID, Group: e.groups[groupClientKey(r.Client, r.ClientID)],
			CorrelationID: r.CorrelationID, Arrival: r.Arrival, End: r.End, LatencyMs: r.LatencyMs, ResponseBytes: r.ResponseBytes,
			Unanswered: !r.Answered}
		for _, p := range r.Partitions {
			if p.Bytes > 0 || !r.Answered {
				fp := FetchPartition{Topic: p.Topic, Partition: p.Partition, Bytes: p.Bytes, FetchOffset: p.FetchOffset}
				if p.FetchOffset != nil && p.HighWatermark != nil {
					behind := max(0, *p.HighWatermark-*p.FetchOffset)
					fp.Behind = &behind
				}
				if p.FirstTimestamp != nil && *p.FirstTimestamp > 0 && !r.End.IsZero() {
					age := max(0, float64(r.End.UnixMilli()-*p.FirstTimestamp))
					fp.AgeMs = &age
				}
				fe.Partitions = append(fe.Partitions, fp)
			}
		}
		fe.DiskReads, fe.DiskReadBytes = e.idx.reads.during(fr.arrival, min(fr.end, lastWait+fetchEvidenceWindow))
		f.BlockingFetches = append(f.BlockingFetches, fe)
	}
	slices.SortStableFunc(f.BlockingFetches, func(a, b FetchEvidence) int { return cmp.Compare(b.ResponseBytes, a.ResponseBytes) })
	f.BlockingFetches = f.BlockingFetches[:min(len(f.BlockingFetches), maxFetchEvidence)]
}

func networkThreadBlockedDetail(f *Finding) string {
	if len(f.NetworkThreadWaits) == 0 {
		if f.QueuedBehind != nil {
			return fmt.Sprintf("waited %.1f ms on its connection behind request %d, whose network thread was blocked", f.ExplainedMs, f.QueuedBehind.CorrelationID)
		}
		return fmt.Sprintf("its network thread was blocked %.1f ms", f.ExplainedMs)
	}
	k := f.NetworkThreadWaits[0]
	s := fmt.Sprintf("its connection's network thread (tid %d) was blocked %.1f ms in the kernel (longest %.1f ms at %s)",
		k.TID, f.ExplainedMs, k.LatencyMs, frames(k.Stack))
	if f.QueuedBehind != nil {
		s += fmt.Sprintf(", queued behind request %d, blocked too", f.QueuedBehind.CorrelationID)
	}
	if len(f.BlockingFetches) > 0 {
		b := f.BlockingFetches[0]
		if b.Unanswered {
			// Sorted by response size: all of them are unanswered.
			s += fmt.Sprintf(", serving %d unanswered fetch(es) on its other connections (no response in the capture), the first to %s (%s)", len(f.BlockingFetches), b.Client, b.ClientID)
		} else {
			s += fmt.Sprintf(", serving %d fetch(es) on its other connections, the largest %d bytes to %s (%s)", len(f.BlockingFetches), b.ResponseBytes, b.Client, b.ClientID)
		}
		if b.Group != "" {
			s += fmt.Sprintf(" of consumer group %s", b.Group)
		}
		if len(b.Partitions) > 0 {
			p := b.Partitions[0]
			s += fmt.Sprintf(" from %s-%d", p.Topic, p.Partition)
			if p.FetchOffset != nil {
				s += fmt.Sprintf(" at offset %d", *p.FetchOffset)
			}
			if p.Behind != nil {
				s += fmt.Sprintf(", %d records behind the high watermark", *p.Behind)
			}
			if p.AgeMs != nil {
				s += fmt.Sprintf(", data %s old", ageText(*p.AgeMs))
			}
		}
		if b.DiskReads > 0 {
			s += fmt.Sprintf(", %.1f MB read from disk while it was served (%d block reads)", float64(b.DiskReadBytes)/(1<<20), b.DiskReads)
		}
	}
	return s
}

// ageText is how old fetched data was, in the unit that reads best.
func ageText(ms float64) string {
	switch {
	case ms >= 2*3600_000:
		return fmt.Sprintf("%.1f h", ms/3600_000)
	case ms >= 120_000:
		return fmt.Sprintf("%.1f min", ms/60_000)
	case ms >= 1000:
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}
