package wire

import (
	"testing"
	"time"
)

// FuzzFrames feeds arbitrary bytes as the two directions of a connection,
// cut into segments at fuzzer-chosen sizes. The decoder must not panic,
// and everything it emits must be internally consistent.
func FuzzFrames(f *testing.F) {
	f.Add(requestFrame(produceRequest("orders", 1, -1, "m-1", "m-2"), 9, 7, "producer-1"),
		responseFrame(produceResponse("orders", 1), 9, 7), uint8(13))
	f.Add(requestFrame(produceRequest("t", 0, 1, "a"), 3, 1, "c"), responseFrame(produceResponse("t", 0), 3, 1), uint8(200))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 0}, []byte{0, 0, 0, 4, 0, 0, 0, 1}, uint8(3))
	f.Fuzz(func(t *testing.T, req, resp []byte, mss uint8) {
		seg := int(mss)%1400 + 1
		c := newConversation(40100)
		c.handshake()
		c.send(true, req, seg, time.Millisecond)
		c.send(false, resp, seg, time.Millisecond)
		c.send(true, req, seg, time.Millisecond)
		got, st := run(c.segs)
		for _, r := range got {
			if r.Answered && r.End.Before(r.Arrival) {
				t.Fatalf("end before arrival: %+v", r)
			}
			if !r.Answered && r.LatencyMs != 0 {
				t.Fatalf("unanswered with latency: %+v", r)
			}
		}
		if st.Requests < st.Responses {
			t.Fatalf("more responses than requests: %+v", st)
		}
	})
}
