package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
)

// TestAgentExactAtLoad: at the highest request rate the broker sustains
// here (kscope bench run --rate max: 100-byte messages, linger 0, 1 KiB
// batches into one partition, so that requests rather than bytes are the
// load; 8 producers and 2 consumers), with tracing and the slow log on,
// the agent counts
// every request the broker's own request log has, once, by API and
// topic: nothing dropped by a busy agent, nothing counted twice.
func TestAgentExactAtLoad(t *testing.T) {
	labtest.RequireRoot(t)
	libs := labtest.RequireKafka(t)
	b := labtest.Broker(t, lab.BrokerConfig{RequestLog: true, LibsDir: libs})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
	a := startAgent(ctx, t, true, "--iface", "lo", "--port", port, "--pid", strconv.Itoa(b.PID()),
		"--log-dirs", strings.Join(b.LogDirs(), ","), "--out", t.TempDir())
	before := agentRequests(t, a.scrape(t))

	const topic = "agent-load"
	out := filepath.Join(t.TempDir(), "load.json")
	var stdout, stderr bytes.Buffer
	args := []string{"bench", "run", "--bootstrap", b.Addr(), "--rate", "max", "--producers", "8", "--linger", "0",
		"--batch-bytes", "1024", "--message-size", "100", "--consumers", "2", "--partitions", "1",
		"--warmup", "2s", "--duration", "15s", "--topic", topic, "-q", "-o", out}
	if code := cli.Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("kscope bench run: exit %d: %s", code, stderr.String())
	}
	var res bench.Result
	if raw, err := os.ReadFile(out); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}

	// The clients have closed their connections, but a consumer's last
	// Fetch is answered only when its wait ends (franz-go asks for 5 s),
	// and the client then resets the connection: the counts are final
	// when nothing is in flight and they stay the same for two seconds.
	var got, prev map[string]float64
	deadline := time.Now().Add(30 * time.Second)
	for {
		time.Sleep(time.Second)
		fams := a.scrape(t)
		now := agentRequests(t, fams)
		inFlight := metricSum(fams, "kscope_agent_requests_in_flight", nil)
		if inFlight == 0 && maps.Equal(now, got) && maps.Equal(now, prev) {
			break
		}
		prev, got = got, now
		if time.Now().After(deadline) {
			t.Fatalf("30 s after the load: %v requests in flight, counts moving: %v", inFlight, !maps.Equal(now, prev))
		}
	}
	fams := a.scrape(t)
	for _, name := range []string{"kscope_agent_capture_drops_total", "kscope_agent_skipped_bytes_total",
		"kscope_agent_decode_errors_total", "kscope_agent_ringbuf_drops_total"} {
		if v := metricSum(fams, name, nil); v != 0 {
			t.Errorf("%s = %v, want 0", name, v)
		}
	}
	if err := a.stop(t, syscall.SIGTERM); err != nil {
		t.Fatalf("kscope agent on SIGTERM: %v: %s", err, a.errOut())
	}
	for k, v := range before {
		got[k] -= v
		if got[k] == 0 {
			delete(got, k)
		}
	}

	logged := loggedRequests(t, b.RequestLogPath(), port)
	keys := slices.Sorted(maps.Keys(logged))
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := logged[k]; !ok {
			keys = append(keys, k)
		}
	}
	var total float64
	for _, k := range keys {
		total += float64(logged[k])
		if got[k] != float64(logged[k]) {
			t.Errorf("requests %s: the agent counted %v, the broker logged %d", k, got[k], logged[k])
		}
	}
	// A request whose connection closed before its response is logged
	// by the broker, and counted by the agent as unanswered.
	t.Logf("%.0f requests logged in %v (API, topic) pairs, %v unanswered; %.0f requests/s in the measured part (%.0f messages/s)",
		total, len(keys), metricSum(fams, "kscope_unanswered_requests_total", nil), res.Totals.RequestsPerSec, res.Totals.MsgsPerSec)
	if res.Totals.Requests["Produce"] == 0 {
		t.Errorf("bench run counted no produce request: %+v", res.Totals)
	}
}

// benchClients starts the client ids of kscope bench run's clients: only
// their requests are compared (the lab's readiness probe talks to the
// broker before the agent starts).
const benchClients = "kscope-bench-"

// agentRequests is kscope_requests_total of the bench's clients by "api
// topic".
func agentRequests(t *testing.T, fams map[string]*dto.MetricFamily) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	f := fams["kscope_requests_total"]
	if f == nil {
		return out
	}
	for _, m := range f.GetMetric() {
		var api, topic, client string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "api":
				api = l.GetValue()
			case "topic":
				topic = l.GetValue()
			case "client_id":
				client = l.GetValue()
			}
		}
		if strings.HasPrefix(client, benchClients) {
			out[api+" "+topic] += m.GetCounter().GetValue()
		}
	}
	return out
}

// loggedRequests counts the broker's request log by "api topic" the way
// the agent does: a request once per topic it names, in "" when it names
// none; only the bench's requests to the listener on port.
func loggedRequests(t *testing.T, path, port string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := requestlog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range entries {
		if !strings.HasSuffix(e.BrokerAddr, ":"+port) || !strings.HasPrefix(e.ClientID, benchClients) {
			continue
		}
		api := kmsg.NameForKey(e.APIKey)
		if api == "" {
			api = fmt.Sprintf("unknown(%d)", e.APIKey)
		}
		seen := map[string]bool{}
		for _, tp := range e.TopicPartitions {
			if !seen[tp.Topic] {
				seen[tp.Topic] = true
				out[api+" "+tp.Topic]++
			}
		}
		if len(seen) == 0 {
			out[api+" "]++
		}
	}
	return out
}
