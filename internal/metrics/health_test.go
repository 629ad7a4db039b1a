package metrics

import (
	"maps"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func TestHealthCollector(t *testing.T) {
	type series struct {
		name   string
		labels map[string]string
		typ    dto.MetricType
		want   float64
	}
	const (
		counter = dto.MetricType_COUNTER
		gauge   = dto.MetricType_GAUGE
	)
	full := Health{
		CaptureUp: true, TraceUp: false, BrokerPID: 4242,
		Packets: 1000, KernelDrops: 7, SkippedBytes: 65536, Gaps: 3, DecodeErrors: 2, BatchErrors: 1, Evicted: 5,
		Connections:  12,
		InFlight:     map[string]int{"Produce": 3, "Fetch": 1},
		RingbufDrops: map[string]int64{"writes": 9, "journal": 0, "waits": 4},
		Restarts:     map[string]int64{"capture": 2, "trace": 1}, IDsNotHeld: 8,
		SlowRequests: 40, SlowDropped: 6, TracedEvents: 123456, HeapBytes: 1 << 20, SlowLogErrors: 1,
	}
	tests := []struct {
		name     string
		health   Health
		want     []series
		families int // the number of families gathered
	}{
		{
			name:   "everything set",
			health: full,
			want: []series{
				{"kscope_agent_up", l("component", "capture"), gauge, 1},
				{"kscope_agent_up", l("component", "trace"), gauge, 0},
				{"kscope_agent_broker_pid", l(), gauge, 4242},
				{"kscope_agent_packets_total", l(), counter, 1000},
				{"kscope_agent_capture_drops_total", l(), counter, 7},
				{"kscope_agent_skipped_bytes_total", l(), counter, 65536},
				{"kscope_agent_stream_gaps_total", l(), counter, 3},
				{"kscope_agent_decode_errors_total", l(), counter, 2},
				{"kscope_agent_batch_errors_total", l(), counter, 1},
				{"kscope_agent_evicted_requests_total", l(), counter, 5},
				{"kscope_agent_message_ids_not_held_total", l(), counter, 8},
				{"kscope_agent_connections", l(), gauge, 12},
				{"kscope_agent_requests_in_flight", l("api", "Produce"), gauge, 3},
				{"kscope_agent_requests_in_flight", l("api", "Fetch"), gauge, 1},
				{"kscope_agent_ringbuf_drops_total", l("ring", "writes"), counter, 9},
				{"kscope_agent_ringbuf_drops_total", l("ring", "journal"), counter, 0},
				{"kscope_agent_ringbuf_drops_total", l("ring", "waits"), counter, 4},
				{"kscope_agent_restarts_total", l("component", "capture"), counter, 2},
				{"kscope_agent_restarts_total", l("component", "trace"), counter, 1},
				{"kscope_agent_slow_requests_total", l(), counter, 40},
				{"kscope_agent_slow_requests_dropped_total", l(), counter, 6},
				{"kscope_agent_traced_events_total", l(), counter, 123456},
				{"kscope_agent_slow_log_errors_total", l(), counter, 1},
			},
			families: 18,
		},
		{
			name:   "zero value: no labelled series from nil maps",
			health: Health{},
			want: []series{
				{"kscope_agent_up", l("component", "capture"), gauge, 0},
				{"kscope_agent_up", l("component", "trace"), gauge, 0},
				{"kscope_agent_broker_pid", l(), gauge, 0},
				{"kscope_agent_capture_drops_total", l(), counter, 0},
				{"kscope_agent_slow_requests_dropped_total", l(), counter, 0},
			},
			families: 15, // no in-flight, ring buffer or restart series
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg := prometheus.NewPedanticRegistry() // checks Collect against Describe
			reg.MustRegister(NewHealthCollector(func() Health { return tc.health }))
			fams := families(t, reg)
			if len(fams) != tc.families {
				t.Errorf("%d families, want %d: %v", len(fams), tc.families, slices.Sorted(maps.Keys(fams)))
			}
			// Every series is listed: none missing, none extra.
			n := 0
			for _, mf := range fams {
				n += len(mf.GetMetric())
			}
			if tc.name == "everything set" && n != len(tc.want) {
				t.Errorf("%d series, want %d", n, len(tc.want))
			}
			for _, w := range tc.want {
				if got := fams[w.name].GetType(); got != w.typ {
					t.Errorf("%s: type %v, want %v", w.name, got, w.typ)
				}
				if got := value(t, fams, w.name, w.labels); got != w.want {
					t.Errorf("%s%v = %v, want %v", w.name, w.labels, got, w.want)
				}
			}
			if mf := fams["kscope_agent_capture_drops_total"]; mf.GetHelp() == "" {
				t.Error("no help text")
			}
		})
	}
}

// TestHealthCollectorReadsEachScrape: the collector keeps no state; each
// gather reads the current Health.
func TestHealthCollectorReadsEachScrape(t *testing.T) {
	var drops atomic.Int64
	var calls atomic.Int64
	reg := prometheus.NewRegistry()
	reg.MustRegister(NewHealthCollector(func() Health {
		calls.Add(1)
		return Health{KernelDrops: drops.Load(), CaptureUp: drops.Load() > 0}
	}))
	for _, d := range []int64{0, 5, 17} {
		drops.Store(d)
		fams := families(t, reg)
		if got := value(t, fams, "kscope_agent_capture_drops_total", l()); got != float64(d) {
			t.Errorf("drops %v, want %d", got, d)
		}
		up := 0.0
		if d > 0 {
			up = 1
		}
		if got := value(t, fams, "kscope_agent_up", l("component", "capture")); got != up {
			t.Errorf("up %v, want %v", got, up)
		}
	}
	if calls.Load() != 3 {
		t.Errorf("read called %d times for 3 gathers, want 3", calls.Load())
	}
}

// TestHealthWithSet: the health collector and the metrics share one
// registry without a clash.
func TestHealthWithSet(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(reg, Options{}); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(NewHealthCollector(func() Health { return Health{} })); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Fatal(err)
	}
}
