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
