package wire

import (
	"testing"
	"time"
)

// A request whose middle segment the capture saw only as a later
// retransmission is complete when that segment arrived, not when its last
// byte did; the retransmissions and zero windows during it are counted.
func TestRetransmissionsAndCompletion(t *testing.T) {
	c := newConversation(40100)
	c.handshake()
	t0 := c.now
	req := requestFrame(produceRequest("orders", 1, -1, "m-1", "m-2", "m-3"), 9, 5, "p")
	third := len(req) / 3
	c.send(true, req[:third], 10000, 0)
	lostAt := len(c.segs)
	c.send(true, req[third:2*third], 10000, 0) // lost before the capture point...
	c.now = c.now.Add(time.Millisecond)
	c.send(true, req[2*third:], 10000, 0) // ...the rest arrives at +1 ms
	lost := c.segs[lostAt]
	c.segs = append(c.segs[:lostAt], c.segs[lostAt+1:]...)
	// ...and is retransmitted at +200 ms.
	lost.ci.Timestamp = t0.Add(200 * time.Millisecond)
	lost.ci.CaptureLength = len(lost.data)
	c.segs = append(c.segs, lost)
	c.now = t0.Add(210 * time.Millisecond)
	resp := responseFrame(produceResponse("orders", 1), 9, 5)
	c.zeroWindow = true // the broker's receive window is full meanwhile
	c.send(false, resp, 10000, 0)
	c.zeroWindow = false
	// The response is sent again (a spurious timeout): counted, and the
	// request still ends at the first copy.
	dup := c.segs[len(c.segs)-1]
	dup.ci.Timestamp = t0.Add(400 * time.Millisecond)
	c.segs = append(c.segs, dup)

	got, st := run(c.segs)
	if len(got) != 1 || !got[0].Answered {
		t.Fatalf("got %d requests (stats %+v)", len(got), st)
	}
	r := got[0]
	if r.LatencyMs != 210 {
		t.Errorf("latency %v ms, want 210", r.LatencyMs)
	}
	// Complete at +200 (the retransmission), answered at +210.
	if r.BrokerMs != 10 {
		t.Errorf("broker_ms %v, want 10 (the request was complete only when the retransmitted segment arrived)", r.BrokerMs)
	}
	// The hole-filler counts: behind bytes already captured, it is a
	// retransmission (or a reordering) seen from the capture point.
	// The zero window came from the broker (its receive buffer full):
	// counted as the broker's, not the client's.
	if r.Retransmits != 1 || r.ResponseRetransmits != 0 || r.ZeroWindows != 0 || r.BrokerZeroWindows != 1 {
		t.Errorf("retransmits %d, response retransmits %d, zero windows %d, the broker's %d; want 1, 0 (the duplicate came after the end), 0, 1",
			r.Retransmits, r.ResponseRetransmits, r.ZeroWindows, r.BrokerZeroWindows)
	}
}

// Retransmissions inside a request's life are counted per direction.
func TestRetransmitsCounted(t *testing.T) {
	c := newConversation(40101)
	c.handshake()
	req := requestFrame(produceRequest("orders", 1, -1, "m-1"), 9, 6, "p")
	c.send(true, req[:10], 10000, time.Millisecond)
	again := c.segs[len(c.segs)-1]
	again.ci.Timestamp = c.now
	c.segs = append(c.segs, again, again) // the same bytes twice more
	c.send(true, req[10:], 10000, time.Millisecond)
	c.now = c.now.Add(5 * time.Millisecond)
	c.send(false, responseFrame(produceResponse("orders", 1), 9, 6), 10000, time.Millisecond)
	got, _ := run(c.segs)
	if len(got) != 1 {
		t.Fatalf("got %d requests", len(got))
	}
	if r := got[0]; r.Retransmits != 2 || r.ResponseRetransmits != 0 || r.ZeroWindows != 0 {
		t.Errorf("retransmits %d/%d, zero windows %d; want 2/0, 0", r.Retransmits, r.ResponseRetransmits, r.ZeroWindows)
	}
}

func TestSignalRing(t *testing.T) {
	var r signalRing
	t0 := time.Unix(1000, 0)
	for i := range 100 {
		r.add(t0.Add(time.Duration(i) * time.Millisecond))
	}
	// Only the newest 32 are kept: 68..99 ms.
	if n := r.count(t0, t0.Add(time.Second)); n != 32 {
		t.Errorf("count over all = %d, want 32", n)
	}
	if n := r.count(t0.Add(90*time.Millisecond), t0.Add(95*time.Millisecond)); n != 6 {
		t.Errorf("count 90..95 ms = %d, want 6", n)
	}
}

// A response that left only when the client's late ACK acknowledged the
// broker's earlier response was held by TCP: ackClock measures how long
// the data in flight had waited.
func TestResponseHeldForACK(t *testing.T) {
	c := newConversation(40102)
	c.handshake()
	t0 := c.now
	c.send(true, requestFrame(produceRequest("orders", 1, 1, "m-1"), 9, 1, "p"), 10000, 0)
	c.now = t0.Add(time.Millisecond)
	c.send(false, responseFrame(produceResponse("orders", 1), 9, 1), 10000, 0) // in flight from +1 ms
	c.now = t0.Add(2 * time.Millisecond)
	c.send(true, requestFrame(produceRequest("orders", 1, 1, "m-2"), 9, 2, "p"), 10000, 0)
	// The client's ACK of response 1 arrives at +300 ms; response 2 leaves
	// 50 µs later.
	c.now = t0.Add(300 * time.Millisecond)
	c.ack = true
	c.add(true, nil, false)
	c.ack = false
	c.now = c.now.Add(50 * time.Microsecond)
	c.send(false, responseFrame(produceResponse("orders", 1), 9, 2), 10000, 0)
	// Response 3 to a request at +400 ms goes at once: nothing held it.
	c.now = t0.Add(400 * time.Millisecond)
	c.send(true, requestFrame(produceRequest("orders", 1, 1, "m-3"), 9, 3, "p"), 10000, 0)
	c.now = t0.Add(402 * time.Millisecond)
	c.send(false, responseFrame(produceResponse("orders", 1), 9, 3), 10000, 0)

	got, _ := run(c.segs)
	if len(got) != 3 {
		t.Fatalf("got %d requests", len(got))
	}
	want := []float64{0, 299.05, 0}
	for i, r := range got {
		if d := r.ResponseAckWaitMs - want[i]; d < -0.001 || d > 0.001 {
			t.Errorf("request %d: response_ack_wait_ms %v, want %v", r.CorrelationID, r.ResponseAckWaitMs, want[i])
		}
	}
}

// While the broker recovers from a loss (it retransmitted), its window is
// a segment or two: a response that leaves right after an ACK of part of
// the data in flight, or a duplicate ACK (its SACK says more arrived),
// waited for that ACK. Without the retransmission the same ACK proves
// nothing (the broker's window was open).
func TestResponseHeldForPartialACK(t *testing.T) {
	for _, tc := range []struct {
		name       string
		retransmit bool
		duplicate  bool // the ACK acknowledges nothing new
		want       float64
	}{
		{"partial in recovery", true, false, 299.05},
		{"partial, window open", false, false, 0},
		{"duplicate in recovery", true, true, 299.05},
		{"duplicate, window open", false, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newConversation(40103)
			c.handshake()
			t0 := c.now
			c.send(true, requestFrame(produceRequest("orders", 1, 1, "m-1"), 9, 1, "p"), 10000, 0)
			c.now = t0.Add(time.Millisecond)
			resp1 := responseFrame(produceResponse("orders", 1), 9, 1)
			seq1 := c.bseq
			c.send(false, resp1, 10000, 0) // in flight from +1 ms
			c.now = t0.Add(2 * time.Millisecond)
			c.send(true, requestFrame(produceRequest("orders", 1, 1, "m-2"), 9, 2, "p"), 10000, 0)
			c.now = t0.Add(3 * time.Millisecond)
			c.send(false, responseFrame(produceResponse("orders", 1), 9, 2), 10000, 0)
			c.now = t0.Add(5 * time.Millisecond)
			c.send(true, requestFrame(produceRequest("orders", 1, 1, "m-3"), 9, 3, "p"), 10000, 0)
			if tc.retransmit { // the retransmission timeout fires: response 1 again
				c.now = t0.Add(250 * time.Millisecond)
				next := c.bseq
				c.bseq = seq1
				c.add(false, resp1, false)
				c.bseq = next
			}
			// The client acknowledges response 1 only at +300 ms (response 2
			// is still in flight), or nothing new; response 3 leaves 50 µs
			// later.
			c.now = t0.Add(300 * time.Millisecond)
			c.ackTo = seq1 + uint32(len(resp1))
			if tc.duplicate {
				c.ackTo = seq1
			}
			c.add(true, nil, false)
			c.ackTo = 0
			c.now = c.now.Add(50 * time.Microsecond)
			c.send(false, responseFrame(produceResponse("orders", 1), 9, 3), 10000, 0)

			got, _ := run(c.segs)
			if len(got) != 3 {
				t.Fatalf("got %d requests", len(got))
			}
			if d := got[2].ResponseAckWaitMs - tc.want; d < -0.001 || d > 0.001 {
				t.Errorf("request 3: response_ack_wait_ms %v, want %v", got[2].ResponseAckWaitMs, tc.want)
			}
			for _, r := range got[:2] {
				if r.ResponseAckWaitMs != 0 {
					t.Errorf("request %d: response_ack_wait_ms %v, want 0", r.CorrelationID, r.ResponseAckWaitMs)
				}
			}
		})
	}
}
