package explain

import (
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// legacyShares is CauseShares as it was, a struct: its JSON is what
// recordings, tests and users read.
type legacyShares struct {
	SlowWriteMs    float64 `json:"slow_write_ms"`
	LockWaitMs     float64 `json:"lock_wait_ms"`
	ReplicationMs  float64 `json:"replication_ms"`
	ThrottleMs     float64 `json:"throttle_ms"`
	ResponseSendMs float64 `json:"response_send_ms"`
	CPUStealMs     float64 `json:"cpu_steal_ms"`
	NetworkMs      float64 `json:"network_ms"`
	NetThreadMs    float64 `json:"network_thread_blocked_ms"`
	CPUStarvedMs   float64 `json:"cpu_starved_ms"`
	GCPauseMs      float64 `json:"gc_pause_ms"`
	SafepointMs    float64 `json:"safepoint_ms"`
	ParkWaitMs     float64 `json:"park_wait_ms"`
	RequestQueueMs float64 `json:"request_queue_ms"`
}

func (l legacyShares) shares() CauseShares {
	return CauseShares{CauseSlowWrite: l.SlowWriteMs, CauseLockWait: l.LockWaitMs, CauseReplication: l.ReplicationMs, CauseThrottle: l.ThrottleMs,
		CauseResponseSend: l.ResponseSendMs, CauseCPUSteal: l.CPUStealMs, CauseNetwork: l.NetworkMs, CauseNetworkThreadBlocked: l.NetThreadMs,
		CauseCPUStarved: l.CPUStarvedMs, CauseGCPause: l.GCPauseMs, CauseSafepoint: l.SafepointMs, CauseParkWait: l.ParkWaitMs, CauseRequestQueue: l.RequestQueueMs}
}

// newShareKeys are the keys of the causes registered since the shares
// were a struct: they follow the struct's, zero in its cases.
const newShareKeys = `,"disk_read_ms":0`

// TestSharesJSONAsBefore: the shares' JSON is byte for byte the struct's,
// zeros, small and large values alike, then the newer causes' keys, and
// reads back the same.
func TestSharesJSONAsBefore(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	v := func(i int) float64 {
		switch i % 4 {
		case 0:
			return 0
		case 1:
			return float64(rng.IntN(100000)) / 1000 // as ms() makes them
		case 2:
			return rng.Float64() * 1e-9
		}
		return rng.Float64() * 1e22
	}
	cases := []legacyShares{{}}
	for i := range 200 {
		cases = append(cases, legacyShares{v(i), v(i + 1), v(i + 2), v(i + 3), v(i + 1), v(i + 2), v(i + 3), v(i), v(i + 1), v(i + 2), v(i + 3), v(i), v(i + 1)})
	}
	for _, l := range cases {
		old, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		want := string(old[:len(old)-1]) + newShareKeys + "}"
		got, err := json.Marshal(l.shares())
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Fatalf("shares %s, want %s", got, want)
		}
		var back CauseShares
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		if again, _ := json.Marshal(back); string(again) != want {
			t.Fatalf("read back: %s, want %s", again, want)
		}
	}
}

func TestSharesJSON(t *testing.T) {
	zeros := `"slow_write_ms":0,"lock_wait_ms":0,"replication_ms":0,"throttle_ms":0,"response_send_ms":0,"cpu_steal_ms":0,"network_ms":0,` +
		`"network_thread_blocked_ms":0,"cpu_starved_ms":0,"gc_pause_ms":0,"safepoint_ms":0,"park_wait_ms":0,"request_queue_ms":0` + newShareKeys
	tests := []struct {
		name   string
		shares CauseShares
		test   bool // with test-stall registered
		want   string
	}{
		{"nil: every cause, zero", nil, false, "{" + zeros + "}"},
		{"a new cause after the others", CauseShares{CauseTestStall: 1.5}, true, "{" + zeros + `,"test_stall_ms":1.5}`},
		{"a cause not registered, by name, last", CauseShares{"zz-top": 2, "old-cause": 1}, false, "{" + zeros + `,"old_cause_ms":1,"zz_top_ms":2}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.test {
				RegisterTestCause(t)
			}
			got, err := json.Marshal(tt.shares)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("%s\nwant %s", got, tt.want)
			}
		})
	}
}
