package consumers

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/fetchsplit"
)

// waitingFetch is a consumer fetch (max_wait 500 ms) whose broker took
// brokerMs before answering in 1 ms, with bytes of records or none.
func waitingFetch(client string, when time.Duration, off, hwm int64, brokerMs float64, data bool) *event.Request {
	last := off - 1
	if data {
		last = hwm - 1
	}
	r := fetch(client, "c-"+client, when, "t", 0, off, last, hwm, t0)
	r.End = r.Arrival.Add(time.Duration((brokerMs + 1) * float64(time.Millisecond)))
	r.LatencyMs, r.BrokerMs, r.ResponseMs = brokerMs+1, brokerMs+1, 1
	r.ResponseBytes = 1 << 10 // sent in 1 ms: 1 MB/s, slower than the default rate by a little
	r.Fetch = event.FetchParams{MaxWaitMs: 500, MinBytes: 1}
	return r
}

// behind makes a fetch response return records up to last only.
func behind(r *event.Request, last int64) *event.Request {
	r.Partitions[0].LastOffset = i64(last)
	return r
}

func TestFetchLatency(t *testing.T) {
	tests := []struct {
		name      string
		reqs      []*event.Request
		wantSlow  float64 // abnormal p99, ms (±2% and 0.05 ms)
		wantPurg  float64 // purgatory share
		wantRule  bool    // a slow-fetch finding
		wantBasis fetchsplit.Basis
	}{
		{
			name: "caught up: every fetch waits max_wait_ms for nothing, none is slow",
			reqs: []*event.Request{waitingFetch("10.0.0.5:1", 0, 10, 10, 500, false), waitingFetch("10.0.0.5:1", time.Second, 10, 10, 500, false),
				waitingFetch("10.0.0.5:1", 2*time.Second, 10, 10, 500, false)},
			wantSlow: 1, wantPurg: 500.0 / 501, wantBasis: fetchsplit.BasisNoData,
		},
		{
			name: "behind: the data was there (the last response's high watermark) and the broker took 400 ms",
			reqs: []*event.Request{behind(waitingFetch("10.0.0.5:1", 0, 0, 5000, 1, true), 999), waitingFetch("10.0.0.5:1", time.Second, 1000, 5000, 400, true),
				waitingFetch("10.0.0.6:1", 2*time.Second, 5000, 9000, 1, true)},
			wantSlow: 401, wantPurg: 0, wantRule: true, wantBasis: fetchsplit.BasisDataThere,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := New(Options{})
			for _, r := range tc.reqs {
				a.Add(r)
			}
			rep := a.Report()
			if len(rep.FetchLatency) == 0 {
				t.Fatal("no fetch latency")
			}
			fl := rep.FetchLatency[0]
			if math.Abs(fl.AbnormalP99Ms-tc.wantSlow) > 0.02*tc.wantSlow+0.05 || math.Abs(fl.PurgatoryShare-tc.wantPurg) > 0.01 ||
				fl.Bases[tc.wantBasis] == 0 {
				t.Errorf("fetch latency %+v: want slow p99 %.1f ms, purgatory share %.2f, a fetch of basis %s", fl, tc.wantSlow, tc.wantPurg, tc.wantBasis)
			}
			fired := false
			for _, f := range rep.Findings {
				fired = fired || f.Rule == "slow-fetch"
			}
			if fired != tc.wantRule {
				t.Errorf("slow-fetch finding: %v, want %v (%+v)", fired, tc.wantRule, rep.Findings)
			}
			var out strings.Builder
			if err := Write(&out, rep, "table", 10); err != nil || !strings.Contains(out.String(), "FETCH LATENCY") {
				t.Errorf("table without the fetch latency (%v):\n%s", err, out.String())
			}
		})
	}
}
