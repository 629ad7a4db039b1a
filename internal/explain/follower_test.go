package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/clockalign"
	"github.com/kscope-dev/kscope/internal/event"
)

// seen moves a fetch's times as another capture saw it: its request left
// sent ms after t0 and its response's first and last bytes arrived at
// respStart and end, all on a clock skew ms ahead.
func seen(r *event.Request, skew, sent, respStart, end float64) *event.Request {
	c := *r
	c.Arrival, c.End = at(sent+skew), at(end+skew)
	c.LatencyMs, c.ResponseMs = end-sent, end-respStart
	return &c
}

// answered sets when the leader answered a fetch (its response's first
// and last byte at the leader's capture).
func answered(respStart, end float64) func(*event.Request) {
	return func(r *event.Request) {
		r.End = at(end)
		r.ResponseMs = end - respStart
		r.LatencyMs = end - float64(r.Arrival.Sub(t0))/1e6
	}
}

// TestFollowerWait: a leader's acks=all request (corr 7, t-0 offset 40,
// appended 1 to 1.2 ms, answered at 100 ms) waited for follower 2, whose
// fetch past offset 40 arrived at 90 ms. Follower 2's own recording, its
// clock 250 ms ahead, says where that wait went.
func TestFollowerWait(t *testing.T) {
	const skew = 250.0
	carrier := ffetch(1, 2, -5, 40, answered(1.5, 1.6)) // waited in the leader's purgatory for the records
	next := ffetch(2, 2, 90, 41)
	leaderReqs := []*event.Request{carrier, next, req(7, 0, 100, acksAll(40))}
	own := []*event.Write{wr(11, 1, 1.2, 100)}
	fetcherWrite := func(a, b float64) *event.Write {
		return wr(900, a+skew, b+skew, 100, func(w *event.Write) { w.Thread = "ReplicaFetcherT" })
	}
	frozen := &event.KernelWait{Kind: event.KindKernelWait, Start: at(3 + skew), End: at(88 + skew), LatencyMs: 85, TID: 900, Thread: "ReplicaFetcherT",
		Stack: []string{"__schedule", "percpu_rwsem_wait", "__percpu_down_read", "ext4_buffered_write_iter", "vfs_write"}}
	tests := []struct {
		name        string
		peerReqs    []*event.Request // the fetches as the follower's capture saw them
		peerEvents  []any
		noPeer      bool
		cause       string  // follower_cause; "" for none
		appendMs    float64 // at least
		networkMs   float64 // at least
		frozen      bool
		detailParts []string
	}{
		{
			name:       "known yes: the follower's append hung on a frozen file system",
			peerReqs:   []*event.Request{seen(carrier, skew, -5.05, 1.55, 1.7), seen(next, skew, 89.95, 91, 91.1)},
			peerEvents: []any{[]*event.Write{fetcherWrite(3, 88)}, []*event.KernelWait{frozen}},
			cause:      CauseSlowWrite, appendMs: 84.9, frozen: true,
			detailParts: []string{"broker 2's appends (t-0, tid 900) took 85.0 ms of the 88.8 ms wait", "file system frozen"},
		},
		{
			name: "known yes: the response crawled to the follower",
			// The response's last byte reached the follower at 85 ms;
			// its append took 0.2 ms.
			peerReqs:   []*event.Request{seen(carrier, skew, -5.05, 2, 85), seen(next, skew, 89.9, 91, 91.1)},
			peerEvents: []any{[]*event.Write{fetcherWrite(85.5, 85.7)}},
			cause:      CauseNetwork, networkMs: 83.5,
			detailParts: []string{"its fetches and their responses were between broker 2 and the leader"},
		},
		{
			name:     "known no: the follower's recording lacks the fetches",
			peerReqs: []*event.Request{},
			cause:    CauseUnexplained,
		},
		{
			name:   "known no: no recording of the follower",
			noPeer: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{Slow: 50 * time.Millisecond}, indexOf(t, own), nil)
			if !tt.noPeer {
				e.SetPeers([]*Peer{{NodeID: 2, Index: indexOf(t, tt.peerEvents...), Scan: scanOf(t, tt.peerReqs),
					Clock: clockalign.Estimate{OffsetNs: int64(skew * 1e6), ErrorNs: 50_000}}})
			}
			got, sum := runFile(t, e, leaderReqs)
			if len(got) != 1 || got[0].Cause != CauseReplication {
				t.Fatalf("findings %+v, want one replication finding", got)
			}
			f := got[0]
			if tt.cause == "" {
				if f.Follower != nil || f.FollowerCause != "" {
					t.Errorf("follower %v %q without its recording", *f.Follower, f.FollowerCause)
				}
				return
			}
			if f.Follower == nil || *f.Follower != 2 || f.FollowerCause != tt.cause {
				t.Fatalf("follower %v cause %q, want 2 %q; detail %s", f.Follower, f.FollowerCause, tt.cause, f.Detail)
			}
			fw := f.Replication[0].Follower
			if fw.AppendMs < tt.appendMs || fw.NetworkMs < tt.networkMs || fw.Frozen != tt.frozen {
				t.Errorf("append %.1f ms network %.1f ms frozen %v, want at least %.1f, %.1f, %v", fw.AppendMs, fw.NetworkMs, fw.Frozen, tt.appendMs, tt.networkMs, tt.frozen)
			}
			if fw.WaitMs < 88.7 || fw.WaitMs > 88.9 {
				t.Errorf("wait %.2f ms, want 88.8 (from the append's end to the fetch past offset 40)", fw.WaitMs)
			}
			for _, p := range tt.detailParts {
				if !strings.Contains(f.Detail, p) {
					t.Errorf("detail %q lacks %q", f.Detail, p)
				}
			}
			if len(sum.Followers) != 1 || sum.Followers[0] != (FollowerStat{Broker: 2, Cause: tt.cause, Requests: 1}) {
				t.Errorf("summary followers %+v", sum.Followers)
			}
		})
	}
}

// TestClockOffsetFromScans: the same fetches in two scans, one broker's
// clock 250 ms ahead, in both directions.
func TestClockOffsetFromScans(t *testing.T) {
	const skew = 250.0
	// Broker 2's fetches to broker 1 ("127.0.0.1:9092") and broker 1's
	// to broker 2 ("127.0.0.1:9093"), as broker 1 saw them.
	var at1, at2 []*event.Request
	for i := range int32(20) {
		a := float64(i) * 10
		f := ffetch(i, 2, a, 40, answered(a+3, a+3.1))
		at1 = append(at1, f)
		at2 = append(at2, seen(f, skew, a-0.05, a+3.05, a+3.15))
		g := ffetch(100+i, 1, a+5, 40, func(r *event.Request) { r.Broker, r.Client = "127.0.0.1:9093", "127.0.0.1:51000" })
		at1 = append(at1, g)
		g2 := seen(g, skew, a+5.05, a+5.9, a+6)
		g2.Arrival, g2.End = at(a+5.05+skew), at(a+6+skew)
		g2.ResponseMs = 0.1
		at2 = append(at2, g2)
	}
	est, ok := ClockOffset(scanOf(t, at1), scanOf(t, at2), 1, 2)
	if !ok || est.Agreeing != 40 {
		t.Fatalf("estimate %+v, %v; want 40 agreeing", est, ok)
	}
	if d := float64(est.OffsetNs)/1e6 - skew; d > float64(est.ErrorNs)/1e6 || -d > float64(est.ErrorNs)/1e6 || est.ErrorNs > 1_000_000 {
		t.Errorf("offset %.3f ± %.3f ms, want %.0f within 1 ms", float64(est.OffsetNs)/1e6, float64(est.ErrorNs)/1e6, skew)
	}
}
