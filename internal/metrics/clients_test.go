package metrics

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/event"
)

// TestClientsCollectorBounded: 30 clients give the top rows named and
// one "other", whatever the number of clients.
func TestClientsCollectorBounded(t *testing.T) {
	t0 := time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC)
	live := clients.NewLive(clients.Options{}, time.Hour)
	for i := range 30 {
		for j := range i + 1 { // client i sends i+1 requests
			live.Add(&event.Request{Arrival: t0.Add(time.Duration(j) * time.Second), Client: fmt.Sprintf("10.0.0.%d:1", i), Broker: "10.0.1.1:9092",
				APIKey: 3, APIVersion: 12, ClientID: fmt.Sprintf("c%02d\x1b", i), Answered: true})
		}
	}
	c := NewClientsCollector(live, 5)
	c.now = func() time.Time { return t0.Add(time.Minute) }
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	n, err := testutil.GatherAndCount(reg, "kscope_client_requests_per_second")
	if err != nil || n != 6 {
		t.Fatalf("%d series (%v), want 5 named and other", n, err)
	}
	want := `
# HELP kscope_clients Clients seen in the clients window (address, principal, client id).
# TYPE kscope_clients gauge
kscope_clients 30
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kscope_clients"); err != nil {
		t.Error(err)
	}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if strings.ContainsRune(l.GetValue(), 0x1b) {
					t.Errorf("label %s=%q not cleaned", l.GetName(), l.GetValue())
				}
				if l.GetName() == "client_id" && l.GetValue() != "other" && l.GetValue() < "c25" {
					t.Errorf("named %q, not one of the five busiest", l.GetValue())
				}
			}
		}
	}
}
