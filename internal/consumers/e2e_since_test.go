package consumers

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestDeliveredSince: the deliveries a produce request passes over all
// came before it, however the fetch responses were ordered (the decoder
// emits each connection's in order, not all of them) and after the ring
// dropped its oldest.
func TestDeliveredSince(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		e := newEndToEnd()
		n := rng.IntN(2 * e2eRing)
		for i := range n {
			// Responses about 1 ms apart, up to 20 ms out of order.
			end := time.Duration(i)*time.Millisecond + time.Duration(rng.IntN(20_000))*time.Microsecond
			r := fetch("10.0.0.9:1", "c", end-5*time.Millisecond, "t", 0, int64(i), int64(i), int64(i+1), at(0))
			e.fetched(r)
		}
		p := e.part("t", 0)
		for range 50 {
			when := at(time.Duration(rng.IntN(n+30)) * time.Millisecond)
			since := p.deliveredSince(when.UnixNano())
			held := p.delivered.items()
			for i, d := range held[:since] {
				if d.at >= when.UnixNano() {
					t.Fatalf("trial %d: delivery %d at %v passed over for a produce request at %v", trial, i, d.at, when)
				}
			}
			if since < len(held) && held[since].latest < when.UnixNano() {
				t.Fatalf("trial %d: stopped at %d, which came before %v", trial, since, when)
			}
			if since > 0 && held[since-1].latest >= when.UnixNano() {
				t.Fatalf("trial %d: stopped at %d, past %d that may have come after %v", trial, since, since-1, when)
			}
		}
	}
}
