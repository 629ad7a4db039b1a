package agent

import (
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/clients"
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
	rec = httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if !strings.Contains(rec.Body.String(), `kscope_client_requests_per_second{address="10.0.0.5",broker_id="1",client_id="billing",cluster_id="c",principal="",software="librdkafka/2.6.0"}`) {
		t.Errorf("no client gauge in /metrics")
	}
}
