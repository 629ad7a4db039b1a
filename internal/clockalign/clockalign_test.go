package clockalign

import (
	"math/rand/v2"
	"testing"
)

// exchanges simulates n fetches between a client and a server whose clock
// is theta ahead: each one-way delay is base plus up to jitter, the
// server holds each request for up to 500 ms.
func exchanges(n int, theta, base, jitter int64, seed uint64) []Exchange {
	rng := rand.New(rand.NewPCG(seed, 1))
	out := make([]Exchange, n)
	t := int64(1_700_000_000_000_000_000)
	for i := range out {
		t += int64(rng.IntN(50_000_000))
		sent := t
		arrived := sent + base + int64(rng.Int64N(jitter+1))
		answered := arrived + int64(rng.IntN(500_000_000))
		back := answered + base + int64(rng.Int64N(jitter+1))
		out[i] = Exchange{ClientRequest: sent, ServerRequest: arrived + theta, ServerResponse: answered + theta, ClientResponse: back}
		t = back
	}
	return out
}

func TestEstimate(t *testing.T) {
	const ms = int64(1_000_000)
	tests := []struct {
		name      string
		ex        []Exchange
		wantTheta int64
		maxErr    int64 // the bound must be at most this
	}{
		{"same clock", exchanges(200, 0, 30_000, 200_000, 1), 0, ms},
		{"server 250 ms ahead", exchanges(200, 250*ms, 30_000, 200_000, 2), 250 * ms, ms},
		{"server 250 ms behind", exchanges(200, -250*ms, 30_000, 200_000, 3), -250 * ms, ms},
		{"slow link, few exchanges", exchanges(5, 3*ms, 20*ms, 40*ms, 4), 3 * ms, 50 * ms},
		{"one exchange", exchanges(1, 7*ms, ms, 0, 5), 7 * ms, ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s Estimator
			for _, x := range tt.ex {
				s.Add(x)
			}
			got, ok := s.Estimate()
			if !ok {
				t.Fatal("no estimate")
			}
			// The true offset must lie within the reported bound, and
			// the bound must be tight enough to be useful.
			if d := got.OffsetNs - tt.wantTheta; d > got.ErrorNs || -d > got.ErrorNs {
				t.Errorf("offset %d ± %d ns does not contain the true %d", got.OffsetNs, got.ErrorNs, tt.wantTheta)
			}
			if got.ErrorNs > tt.maxErr {
				t.Errorf("error bound %d ns, want at most %d", got.ErrorNs, tt.maxErr)
			}
			if got.Agreeing != len(tt.ex) || got.Exchanges != len(tt.ex) {
				t.Errorf("agreeing %d of %d, want all %d", got.Agreeing, got.Exchanges, len(tt.ex))
			}
		})
	}
}

// TestEstimateOutvotesBadExchanges: exchanges that were matched wrongly
// (here shifted by a second) must not move the estimate, and are not
// counted as agreeing.
func TestEstimateOutvotesBadExchanges(t *testing.T) {
	const theta = int64(42_000_000)
	good := exchanges(100, theta, 30_000, 100_000, 6)
	bad := exchanges(10, theta+1_000_000_000, 30_000, 100_000, 7)
	var s Estimator
	for i := range 110 {
		if i%11 == 10 {
			s.Add(bad[i/11])
		} else {
			s.Add(good[i-i/11])
		}
	}
	got, _ := s.Estimate()
	if d := got.OffsetNs - theta; d > got.ErrorNs || -d > got.ErrorNs || got.ErrorNs > 1_000_000 {
		t.Errorf("offset %d ± %d ns, want %d within 1 ms", got.OffsetNs, got.ErrorNs, theta)
	}
	if got.Agreeing != 100 || got.Exchanges != 110 {
		t.Errorf("agreeing %d of %d, want 100 of 110", got.Agreeing, got.Exchanges)
	}
}

func TestEstimateInvalid(t *testing.T) {
	var s Estimator
	if _, ok := s.Estimate(); ok {
		t.Fatal("estimate from no exchanges")
	}
	// A response seen before its own request at the server.
	s.Add(Exchange{ClientRequest: 10, ServerRequest: 20, ServerResponse: 15, ClientResponse: 30})
	if _, ok := s.Estimate(); ok {
		t.Fatal("estimate from an exchange that contradicts itself")
	}
	s.Add(Exchange{ClientRequest: 10, ServerRequest: 20, ServerResponse: 25, ClientResponse: 30})
	got, ok := s.Estimate()
	if !ok || got.Invalid != 1 || got.Exchanges != 2 || got.Agreeing != 1 {
		t.Fatalf("got %+v, %v; want 1 invalid of 2, 1 agreeing", got, ok)
	}
	// Bounds: θ in [25-30, 20-10] = [-5, 10].
	if got.OffsetNs != 2 || got.ErrorNs != 8 {
		t.Errorf("got %d ± %d, want 2 ± 8 (the interval [-5, 10])", got.OffsetNs, got.ErrorNs)
	}
}

func TestReverseCombine(t *testing.T) {
	ab := Estimate{OffsetNs: 100, ErrorNs: 5}
	bc := Estimate{OffsetNs: -30, ErrorNs: 2}
	if got := ab.Combine(bc); got.OffsetNs != 70 || got.ErrorNs != 7 {
		t.Errorf("combine: %+v", got)
	}
	if got := ab.Reverse(); got.OffsetNs != -100 || got.ErrorNs != 5 {
		t.Errorf("reverse: %+v", got)
	}
}

// TestAddReversed: exchanges both ways across a pair give one estimate.
func TestAddReversed(t *testing.T) {
	const theta = int64(-250_000_000) // b's clock minus a's
	var s Estimator
	for _, x := range exchanges(50, theta, 30_000, 100_000, 8) { // a's fetches to b
		s.Add(x)
	}
	for _, x := range exchanges(50, -theta, 30_000, 100_000, 9) { // b's fetches to a
		s.AddReversed(x)
	}
	got, _ := s.Estimate()
	if d := got.OffsetNs - theta; d > got.ErrorNs || -d > got.ErrorNs || got.ErrorNs > 1_000_000 || got.Agreeing != 100 {
		t.Errorf("got %+v, want %d within 1 ms, 100 agreeing", got, theta)
	}
}
