package bench

import (
	"fmt"
	"sort"
	"sync"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The latency series, by index, in the order of seriesNames.
const (
	sService = iota
	sResponse
	sEndToEnd
	sSyncWait
	sBrokerRTT
	nSeries
)

var seriesNames = [nSeries]string{LatencyService, LatencyResponse, LatencyEndToEnd, LatencySyncWait, LatencyBrokerRTT}

// Histogram ranges, in microseconds. The run's histograms keep 3
// significant digits from 1 µs to an hour; the per-second ones, of which
// there are many, keep 2 (their percentiles are samples for compare's
// tests, not the headline figures).
const (
	histMaxUs     = 3_600_000_000
	histDigits    = 3
	secHistDigits = 2
)

func newHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxUs, histDigits) }

func newSecHist() *hdrhistogram.Histogram { return hdrhistogram.New(1, histMaxUs, secHistDigits) }

// us converts a duration in ns to a value to record in µs, clamped to the
// histogram's range (a clock read on another CPU may be a hair earlier).
func us(ns int64) int64 {
	v := ns / 1000
	if v < 0 {
		return 0
	}
	if v > histMaxUs {
		return histMaxUs
	}
	return v
}

// encodeHist returns h in HdrHistogram's standard compressed base64 form
// (V2, the form the Java, C and Go libraries all read).
func encodeHist(h *hdrhistogram.Histogram) (string, error) {
	b, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return "", fmt.Errorf("bench: encode histogram: %w", err)
	}
	return string(b), nil
}

// DecodeHistogram reads a histogram from a result (Latency.Histogram).
func DecodeHistogram(s string) (*hdrhistogram.Histogram, error) {
	h, err := hdrhistogram.Decode([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("bench: decode histogram: %w", err)
	}
	return h, nil
}

// latencyOf summarises h for a result.
func latencyOf(h *hdrhistogram.Histogram) (*Latency, error) {
	enc, err := encodeHist(h)
	if err != nil {
		return nil, err
	}
	l := &Latency{Count: h.TotalCount(), Histogram: enc}
	if l.Count > 0 {
		p := h.ValueAtPercentiles([]float64{50, 90, 99, 99.9, 99.99})
		l.MeanUs = h.Mean()
		l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.P9999Us = p[50], p[90], p[99], p[99.9], p[99.99]
		l.MaxUs = h.Max()
	}
	return l, nil
}

// secAgg is what happened in one second of the run.
type secAgg struct {
	sent, acked, consumed, errors, bytes int64
	hist                                 [nSeries]*hdrhistogram.Histogram // nil: no samples
}

func (a *secAgg) record(series int, v int64) {
	h := a.hist[series]
	if h == nil {
		h = newSecHist()
		a.hist[series] = h
	}
	_ = h.RecordValue(v) // in range by us()
}

// add merges b into a (b is left unchanged).
func (a *secAgg) add(b *secAgg) {
	a.sent += b.sent
	a.acked += b.acked
	a.consumed += b.consumed
	a.errors += b.errors
	a.bytes += b.bytes
	for i, h := range b.hist {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		if a.hist[i] == nil {
			a.hist[i] = newSecHist()
		}
		a.hist[i].Merge(h)
	}
}

func (a *secAgg) reset() {
	a.sent, a.acked, a.consumed, a.errors, a.bytes = 0, 0, 0, 0, 0
	for _, h := range a.hist {
		if h != nil {
			h.Reset()
		}
	}
}

// seconds collects the per-second aggregates of all producers and
// consumers, keyed by seconds since the measured part began.
type seconds struct {
	mu sync.Mutex
	m  map[int]*secAgg
}

func newSeconds() *seconds { return &seconds{m: map[int]*secAgg{}} }

func (s *seconds) merge(sec int, a *secAgg) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.m[sec]
	if g == nil {
		g = &secAgg{}
		s.m[sec] = g
	}
	g.add(a)
}

// recorder is one producer's or consumer's measurements: whole-run
// histograms and the current second's aggregate, handed to the shared
// seconds when its events move on to the next second (each recorder's
// events come in time order: promises are called serially per client, a
// consumer polls in a loop). It is not safe for concurrent use.
type recorder struct {
	total   [nSeries]*hdrhistogram.Histogram
	start   int64 // ns: the measured part's start (second 0)
	sec     int   // the second cur holds; -1: none
	cur     secAgg
	pending []pendingSec
	seconds *seconds
}

func newRecorder(start int64, s *seconds, series ...int) *recorder {
	r := &recorder{start: start, sec: -1, seconds: s}
	for _, i := range series {
		r.total[i] = newHist()
	}
	return r
}

// at returns the aggregate of the second holding time t, or nil before
// the measured part.
func (r *recorder) at(t int64) *secAgg {
	if t < r.start {
		return nil
	}
	sec := int((t - r.start) / 1e9)
	switch {
	case sec == r.sec:
		return &r.cur
	case sec > r.sec:
		r.flush()
		r.sec = sec
		return &r.cur
	}
	// Out of order (not expected): a temporary aggregate, merged at the
	// next flush.
	a := &secAgg{}
	r.pending = append(r.pending, pendingSec{sec, a})
	return a
}

type pendingSec struct {
	sec int
	agg *secAgg
}

// flush hands the current second to the shared table.
func (r *recorder) flush() {
	for _, p := range r.pending {
		r.seconds.merge(p.sec, p.agg)
	}
	r.pending = r.pending[:0]
	if r.sec >= 0 {
		r.seconds.merge(r.sec, &r.cur)
		r.cur.reset()
		r.sec = -1
	}
}

// latency records a sample of series at event time t (ns), both in the
// whole-run histogram and in t's second.
func (r *recorder) latency(series int, t, ns int64) {
	v := us(ns)
	_ = r.total[series].RecordValue(v)
	if a := r.at(t); a != nil {
		a.record(series, v)
	}
}

// series turns the shared table into the result's series: seconds
// 0..n-1, where the last may be partial (lastLen ns long).
func (s *seconds) series(n int, lastLen int64) ([]Second, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Second, 0, n)
	for sec := 0; sec < n; sec++ {
		a := s.m[sec]
		if a == nil {
			a = &secAgg{}
		}
		length := 1.0
		if sec == n-1 && lastLen > 0 {
			length = float64(lastLen) / 1e9
		}
		o := Second{T: sec, Sent: a.sent, Acked: a.acked, Consumed: a.consumed, Errors: a.errors,
			MsgsPerSec: float64(a.acked) / length, MBPerSec: float64(a.bytes) / 1e6 / length,
			Latency: map[string]SecondLatency{}}
		for i, h := range a.hist {
			if h == nil || h.TotalCount() == 0 {
				continue
			}
			p := h.ValueAtPercentiles([]float64{50, 99})
			enc, err := encodeHist(h)
			if err != nil {
				return nil, err
			}
			o.Latency[seriesNames[i]] = SecondLatency{Count: h.TotalCount(), P50Us: p[50], P99Us: p[99], MaxUs: h.Max(), Histogram: enc}
		}
		out = append(out, o)
	}
	return out, nil
}

// keys returns the seconds with data, sorted (for tests).
func (s *seconds) keys() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []int
	for k := range s.m {
		ks = append(ks, k)
	}
	sort.Ints(ks)
	return ks
}
