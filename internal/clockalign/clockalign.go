// Package clockalign estimates how far apart two hosts' clocks are from
// requests that both of them captured: one broker's replica fetcher sends
// a Fetch request that the other broker answers, and each host's capture
// timestamps the request and the response as they pass it.
//
// Each such exchange bounds the offset the NTP way. With the server's
// clock ahead of the client's by θ (server time = client time + θ), the
// request reached the server's capture point after it left the client's,
// and the response reached the client's after it left the server's:
//
//	θ ≤ requestSeenByServer − requestSeenByClient
//	θ ≥ responseSeenByServer − responseSeenByClient
//
// The offset lies in the intersection of every exchange's interval; its
// half width is the error bound, which shrinks with the fastest exchanges
// (the one-way delay between the capture points). A few exchanges that
// disagree (a bad match, a capture that dropped the first packet of a
// request and timed a retransmission) are outvoted: the estimate is the
// interval that most exchanges agree on (Marzullo's algorithm), and the
// result says how many did. Neither clock is assumed right.
//
// The estimate is one offset for the whole recording: clocks that drift
// apart during it widen the intervals until they stop agreeing, which the
// Agreeing count shows.
package clockalign

import (
	"cmp"
	"slices"
)

// Exchange is one request and its response as two capture points saw
// them: the client's (its clock) and the server's (its clock), in
// nanoseconds since the Unix epoch.
type Exchange struct {
	// Request: when its first byte passed the client's and the server's
	// capture point.
	ClientRequest, ServerRequest int64
	// Response: when its first byte passed the server's and the client's
	// capture point (its last byte may be given instead, at both ends).
	ServerResponse, ClientResponse int64
}

// bounds is the interval of server clock − client clock this exchange
// allows: lo ≤ θ ≤ hi. An exchange whose request and response contradict
// each other at one end (its response seen before its request) allows no
// offset: at least one of its times is wrong (!ok).
func (x Exchange) bounds() (lo, hi int64, ok bool) {
	lo, hi = x.ServerResponse-x.ClientResponse, x.ServerRequest-x.ClientRequest
	return lo, hi, lo <= hi && x.ServerResponse >= x.ServerRequest && x.ClientResponse >= x.ClientRequest
}

// Estimate is the offset of one clock to another and how well it is
// known.
type Estimate struct {
	// OffsetNs is the server's clock minus the client's: subtract it from
	// a server time to get the client's.
	OffsetNs int64 `json:"offset_ns"`
	// ErrorNs bounds the error: the true offset is within OffsetNs ±
	// ErrorNs if the agreeing exchanges were measured right.
	ErrorNs int64 `json:"error_ns"`
	// Exchanges were matched; Agreeing of them allow the whole interval
	// [OffsetNs-ErrorNs, OffsetNs+ErrorNs]; Invalid contradicted
	// themselves (a response seen before its request at one end) and were
	// left out.
	Exchanges int `json:"exchanges"`
	Agreeing  int `json:"agreeing"`
	Invalid   int `json:"invalid,omitempty"`
}

// Reverse is the estimate of the other clock against this one.
func (e Estimate) Reverse() Estimate {
	e.OffsetNs = -e.OffsetNs
	return e
}

// Combine is the offset of clock C to clock A from B−A (e) and C−B (f):
// the offsets add, and so do the error bounds.
func (e Estimate) Combine(f Estimate) Estimate {
	return Estimate{OffsetNs: e.OffsetNs + f.OffsetNs, ErrorNs: e.ErrorNs + f.ErrorNs,
		Exchanges: min(e.Exchanges, f.Exchanges), Agreeing: min(e.Agreeing, f.Agreeing)}
}

// Estimator collects the exchanges between two capture points: it keeps
// only each exchange's interval bounds, so memory grows by 16 bytes per
// exchange.
type Estimator struct {
	edges   []edge
	invalid int
}

// edge is one end of an exchange's interval: +1 opens, -1 closes.
type edge struct {
	at   int64
	kind int8
}

// Add adds one exchange.
func (s *Estimator) Add(x Exchange) {
	lo, hi, ok := x.bounds()
	if !ok {
		s.invalid++
		return
	}
	s.edges = append(s.edges, edge{lo, +1}, edge{hi, -1})
}

// Len is the number of valid exchanges added.
func (s *Estimator) Len() int { return len(s.edges) / 2 }

// Estimate returns the offset that the most exchanges agree on, and false
// when no valid exchange was added.
func (s *Estimator) Estimate() (Estimate, bool) {
	n := s.Len()
	if n == 0 {
		return Estimate{Invalid: s.invalid}, false
	}
	edges := slices.Clone(s.edges)
	// Opening edges before closing ones at the same time: touching
	// intervals agree on that instant.
	slices.SortFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(b.kind, a.kind)
	})
	best, depth := 0, 0
	var lo, hi int64
	for i, e := range edges {
		depth += int(e.kind)
		if e.kind > 0 && depth > best {
			best = depth
			lo = e.at
			hi = edges[i+1].at // a closing edge follows an opening one at the peak
		}
	}
	return Estimate{
		OffsetNs:  lo + (hi-lo)/2,
		ErrorNs:   (hi - lo + 1) / 2,
		Exchanges: n + s.invalid,
		Agreeing:  best,
		Invalid:   s.invalid,
	}, true
}

// AddReversed adds an exchange of the other direction: one whose server
// is this estimator's client, so that one estimator holds the exchanges
// both ways across a pair of hosts.
func (s *Estimator) AddReversed(x Exchange) {
	lo, hi, ok := x.bounds()
	if !ok {
		s.invalid++
		return
	}
	s.edges = append(s.edges, edge{-hi, +1}, edge{-lo, -1})
}
