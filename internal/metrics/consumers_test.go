package metrics

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/event"
)

// TestConsumersCollectorBounded: 30 group-less consumers of one topic
// each give the top pairs named and one "other", and the lag in seconds
// is the age of the data at the position.
func TestConsumersCollectorBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	live := consumers.NewLive(consumers.Options{}, time.Hour)
	replica := int32(-1)
	for i := range 30 {
		off, last, hwm := int64(0), int64(9), int64(100+i)
		ts := t0.Add(-time.Duration(i) * time.Second).UnixMilli() // consumer i is i seconds behind
		live.Add(&event.Request{Arrival: t0, End: t0, Client: fmt.Sprintf("10.0.0.%d:1", i), Broker: "10.0.1.1:9092", APIKey: 1,
			ClientID: fmt.Sprintf("c%02d", i), Answered: true, ReplicaID: &replica,
			Partitions: []event.Partition{{Topic: "t", FetchOffset: &off, FirstOffset: &off, LastOffset: &last, HighWatermark: &hwm,
				FirstTimestamp: &ts, Bytes: 1000}}})
	}
	c := NewConsumersCollector(live, 5)
	c.now = func() time.Time { return t0.Add(time.Minute) }
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	if n, err := testutil.GatherAndCount(reg, "kscope_consumer_lag_seconds"); err != nil || n != 6 {
		t.Fatalf("%d series (%v), want 5 named and other", n, err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != "kscope_consumer_lag_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			client := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "client" {
					client = l.GetValue()
				}
			}
			if client != "other" && m.GetGauge().GetValue() < 25 {
				t.Errorf("%s named with %v s: not one of the five most behind", client, m.GetGauge().GetValue())
			}
		}
	}
}

// TestConsumersCollectorFetchLatency: of 8 group-less consumers whose
// fetches were slow beyond any purgatory by 100 ms to 800 ms, the three
// slowest are named with their p99 and the rest are one "other"; a
// consumer whose fetches waited out their max_wait_ms with no data is
// not slow, its time all purgatory.
func TestConsumersCollectorFetchLatency(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	live := consumers.NewLive(consumers.Options{}, time.Hour)
	replica := int32(-1)
	fetch := func(client string, took time.Duration, maxWait int32, bytes int) *event.Request {
		off, last, hwm := int64(0), int64(9), int64(10)
		p := event.Partition{Topic: "t", FetchOffset: &off, HighWatermark: &hwm, Bytes: bytes}
		if bytes > 0 {
			p.FirstOffset, p.LastOffset = &off, &last
		}
		return &event.Request{Arrival: t0, End: t0.Add(took), Client: client, Broker: "10.0.1.1:9092", APIKey: 1, ClientID: "c",
			Answered: true, ReplicaID: &replica, Fetch: event.FetchParams{MaxWaitMs: maxWait, MinBytes: 1}, BrokerMs: float64(took.Milliseconds()),
			Partitions: []event.Partition{p}}
	}
	for i := 1; i <= 8; i++ {
		live.Add(fetch(fmt.Sprintf("10.0.0.%d:1", i), time.Duration(i)*100*time.Millisecond, 0, 1000))
	}
	live.Add(fetch("10.0.0.99:1", 500*time.Millisecond, 500, 0))
	c := NewConsumersCollector(live, 3)
	c.now = func() time.Time { return t0.Add(time.Minute) }
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	got := map[string][2]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		idx := map[string]int{"kscope_consumer_fetch_abnormal_p99_seconds": 0, "kscope_consumer_fetch_purgatory_ratio": 1}
		i, ok := idx[mf.GetName()]
		if !ok {
			continue
		}
		for _, m := range mf.GetMetric() {
			client := ""
			for _, l := range m.GetLabel() {
				if l.GetName() == "client" {
					client = l.GetValue()
				}
			}
			v := got[client]
			v[i] = m.GetGauge().GetValue()
			got[client] = v
		}
	}
	if len(got) != 4 {
		t.Fatalf("%d consumers' series %v, want 3 named and other", len(got), got)
	}
	for i := 6; i <= 8; i++ {
		name := fmt.Sprintf("c@10.0.0.%d", i)
		v, ok := got[name]
		if want := float64(i) / 10; !ok || v[0] < want*0.95 || v[0] > want*1.05 || v[1] != 0 {
			t.Errorf("%s: p99 %v s, purgatory %v; want about %v s and none (all: %v)", name, v[0], v[1], want, got)
		}
	}
	// "other" holds the five fastest (0.1 to 0.5 s) and the idle
	// consumer, whose fetch waited out max_wait_ms with nothing to
	// return: all purgatory, no slow part.
	if o := got["other"]; o[0] < 0.475 || o[0] > 0.525 || o[1] <= 0 || o[1] >= 1 {
		t.Errorf("other: p99 %v s, purgatory share %v; want 0.5 s and some purgatory", o[0], o[1])
	}
}
