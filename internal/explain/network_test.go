package explain

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

func TestNetwork(t *testing.T) {
	tests := []struct {
		name   string
		writes []*event.Write
		delays []*event.RunDelay
		conns  []*event.ConnThread
		req    *event.Request
		cause  string
	}{
		{
			// First byte at 0, last at 80: the broker answered 20 ms later.
			name:   "bytes slow to arrive",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(1, 0, 100, func(r *event.Request) { r.BrokerMs = 20; r.RequestBytes = 1 << 20 }),
			cause:  CauseNetwork,
		},
		{
			// Queued 70 ms behind the previous request while its bytes
			// arrived: the arrival cost nothing.
			name:   "arrival hidden by the queue",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(2, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 70, 20 }),
			cause:  CauseUnexplained,
		},
		{
			// Queued 10 ms, then its bytes kept arriving until 80.
			name:   "arrival after a short queue",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(13, 0, 100, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 10, 20 }),
			cause:  CauseNetwork,
		},
		{
			name:   "a short arrival",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(3, 0, 100, func(r *event.Request) { r.BrokerMs = 70 }),
			cause:  CauseUnexplained,
		},
		{
			// Appended at 10, answered at 100, with a retransmission by
			// the broker meanwhile: TCP held the response.
			name:   "response held by TCP",
			writes: []*event.Write{wr(11, 9, 10, 100)},
			req:    req(5, 0, 100, func(r *event.Request) { r.ResponseRetransmits = 1 }),
			cause:  CauseNetwork,
		},
		{
			name:   "a late response without TCP trouble is no network cause",
			writes: []*event.Write{wr(11, 9, 10, 100)},
			req:    req(6, 0, 100),
			cause:  CauseUnexplained,
		},
		{
			// Appended at 10, the response left at 100 right after an
			// ACK that ended a 95 ms wait.
			name:   "response held for the client's ACK",
			writes: []*event.Write{wr(11, 9, 10, 100)},
			req:    req(8, 0, 100, func(r *event.Request) { r.ResponseAckWaitMs = 95 }),
			cause:  CauseNetwork,
		},
		{
			name:   "a short ACK wait is not most of it",
			writes: []*event.Write{wr(11, 9, 10, 100)},
			req:    req(9, 0, 100, func(r *event.Request) { r.ResponseAckWaitMs = 30 }),
			cause:  CauseUnexplained,
		},
		{
			name:   "a zero window counts as trouble",
			writes: []*event.Write{wr(11, 9, 10, 100)},
			req:    req(7, 0, 100, func(r *event.Request) { r.ZeroWindows = 2 }),
			cause:  CauseNetwork,
		},
		{
			// Appended at 10, a retransmission on the connection, but the
			// network thread waited for a CPU from 12 to 99: the response
			// was held by the broker, not by TCP.
			name:   "a response the network thread could not send is not the network's",
			writes: []*event.Write{wr(11, 9, 10, 100)},
			conns:  []*event.ConnThread{connThread(21, "127.0.0.1:40000", -1000)},
			delays: []*event.RunDelay{runDelay(21, 12, 99, "java")},
			req:    req(10, 0, 100, func(r *event.Request) { r.Retransmits = 1 }),
			cause:  CauseCPUStarved,
		},
		{
			// First byte at 0, last at 80, but the broker's window was
			// closed: it did not read, the network did not hold it.
			name:   "a slow arrival behind the broker's closed window is not the network's",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			req:    req(11, 0, 100, func(r *event.Request) { r.BrokerMs = 20; r.BrokerZeroWindows = 3 }),
			cause:  CauseUnexplained,
		},
		{
			// The same, with the connection's network thread waiting for
			// a CPU while the bytes queued: the arrival is its time.
			name:   "behind the broker's closed window, the network thread's starvation counts from the arrival",
			writes: []*event.Write{wr(11, 85, 85.1, 100)},
			conns:  []*event.ConnThread{connThread(21, "127.0.0.1:40000", -1000)},
			delays: []*event.RunDelay{runDelay(21, 2, 70, "hog")},
			req:    req(12, 0, 100, func(r *event.Request) { r.BrokerMs = 20; r.BrokerZeroWindows = 3 }),
			cause:  CauseCPUStarved,
		},
		{
			name:   "slow arrival and a slow write add up",
			writes: []*event.Write{wr(11, 40, 70, 100)},
			req:    req(4, 0, 100, func(r *event.Request) { r.BrokerMs = 65 }),
			cause:  CauseNetwork,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := New(Config{}, indexOf(t, tt.writes, tt.delays, tt.conns), nil).Explain(tt.req)
			if f.Cause != tt.cause || (f.Cause == CauseCPUStarved && f.Shares[CauseNetwork] > 5) {
				t.Errorf("cause %q, want %q; %s; shares %+v", f.Cause, tt.cause, f.Detail, f.Shares)
			}
			if f.Cause == CauseNetwork && !strings.Contains(f.Detail, "the network held it") {
				t.Errorf("detail %q", f.Detail)
			}
		})
	}
}

// A request queued behind one the network held inherits that time.
func TestNetworkQueuedBehind(t *testing.T) {
	idx := NewIndex()
	idx.AddWrite(wr(11, 9, 10, 100))
	idx.AddWrite(wr(11, 100.5, 100.6, 100))
	e := New(Config{}, idx, nil)
	if f := e.Explain(req(1, 0, 100, func(r *event.Request) { r.ResponseRetransmits = 1 })); f.Cause != CauseNetwork {
		t.Fatalf("first: %s (%s)", f.Cause, f.Detail)
	}
	f := e.Explain(req(2, 1, 102, func(r *event.Request) { r.QueuedMs, r.BrokerMs = 99, 2 }))
	if f.Cause != CauseNetwork || f.QueuedBehind == nil || !strings.Contains(f.Detail, "queued behind request 1") {
		t.Errorf("second: %s %+v (%s)", f.Cause, f.QueuedBehind, f.Detail)
	}
}
