package agent

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestClientsEndpoint: the requests the agent decodes reach /clients and
// the kscope_client_* gauges.
func TestClientsEndpoint(t *testing.T) {
	a, err := New(Config{Wire: wire.Config{Ports: []uint16{9092}}, NoTrace: true, Identity: Identity{BrokerID: "1", ClusterID: "c"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := range 3 {
		a.onRequest(&event.Request{Arrival: now.Add(time.Duration(i) * time.Millisecond), Client: "10.0.0.5:4000", Broker: "10.0.0.1:9092",
			APIKey: 18, APIVersion: 3, ClientID: "billing", SoftwareName: "librdkafka", SoftwareVersion: "2.6.0", Answered: true})
	}
	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/clients", nil))
	var rep clients.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &rep); err != nil {
		t.Fatalf("/clients: %v: %s", err, rec.Body)
	}
	if len(rep.Clients) != 1 || rep.Clients[0].ClientID != "billing" || rep.Clients[0].Requests != 3 || rep.Clients[0].Software[0] != "librdkafka/2.6.0" {
		t.Errorf("/clients: %+v", rep.Clients)
	}
	// A consumer without a group, 40 s behind, reaches /consumers and
	// the lag gauge.
	off, last, hwm := int64(0), int64(9), int64(500)
	ts := now.Add(-40 * time.Second).UnixMilli()
	replica := int32(-1)
	a.onRequest(&event.Request{Arrival: now, End: now, Client: "10.0.0.6:4001", Broker: "10.0.0.1:9092", APIKey: 1, ClientID: "etl",
		Answered: true, ReplicaID: &replica, Partitions: []event.Partition{{Topic: "orders", FetchOffset: &off, FirstOffset: &off,
			LastOffset: &last, HighWatermark: &hwm, FirstTimestamp: &ts, Bytes: 1000}}})
	rec = httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/consumers", nil))
	var crep consumers.Report
	if err := json.Unmarshal(rec.Body.Bytes(), &crep); err != nil || len(crep.Consumers) != 1 || crep.Consumers[0].LagMessages != 490 {
		t.Errorf("/consumers: %v: %s", err, rec.Body)
	}
	rec = httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `kscope_consumer_lag_seconds{broker_id="1",client="etl@10.0.0.6",cluster_id="c",group="",topic="orders"} 40`) {
		t.Errorf("no consumer lag gauge in /metrics")
	}
	if !strings.Contains(rec.Body.String(), `kscope_client_requests_per_second{address="10.0.0.5",broker_id="1",client_id="billing",cluster_id="c",principal="",software="librdkafka/2.6.0"}`) {
		t.Errorf("no client gauge in /metrics")
	}
}
