package e2e

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestLiveOnRealBroker decodes a real broker's traffic live (AF_PACKET,
// no tcpdump) on lo and on "any", and checks it against the broker's
// request log: every logged request found once with its API, version,
// correlation id and client port, and every produced message id decoded.
func TestLiveOnRealBroker(t *testing.T) {
	labtest.RequireRoot(t)
	libs := labtest.RequireKafka(t)
	b := labtest.Broker(t, lab.BrokerConfig{RequestLog: true, LibsDir: libs})
	_, portStr, _ := net.SplitHostPort(b.Addr())
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	for _, iface := range []string{"lo", "any"} {
		t.Run(iface, func(t *testing.T) { testLive(t, b, port, iface) })
	}
}

type liveResult struct {
	reqs []*event.Request
	res  source.Result
	err  error
}

func testLive(t *testing.T, b *lab.Broker, port int, iface string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	liveCtx, stopLive := context.WithCancel(ctx)
	done := make(chan liveResult, 1)
	returned := false
	defer func() {
		// On an early failure, close the socket before the next test.
		stopLive()
		if !returned {
			select {
			case <-done:
			case <-time.After(5 * time.Second):
			}
		}
	}()
	go func() {
		var reqs []*event.Request
		cfg := wire.DefaultConfig()
		cfg.Ports = []uint16{uint16(port)}
		res, err := source.Live(liveCtx, capture.LiveConfig{Interface: iface, Ports: cfg.Ports}, source.Options{Wire: cfg},
			func(r *event.Request) { reqs = append(reqs, r) }, nil)
		done <- liveResult{reqs, res, err}
	}()

	// The socket opens in Live's goroutine: start the traffic once it
	// captures.
	ifindex := 0
	if iface != "any" {
		ifc, err := net.InterfaceByName(iface)
		if err != nil {
			t.Fatal(err)
		}
		ifindex = ifc.Index
	}
	labtest.WaitLiveSocket(ctx, t, ifindex, func() error {
		select {
		case r := <-done:
			returned = true
			return fmt.Errorf("source.Live returned %v", r.err)
		default:
			return nil
		}
	})
	// The request log's timestamps have millisecond resolution.
	captureStart := time.Now().Add(time.Millisecond)

	const n = 1000
	prefix := "live-" + iface + "-"
	codecs := []string{"none", "zstd"}
	for _, codec := range codecs {
		liveProduce(ctx, t, b.Addr(), prefix+codec, codec, n)
	}
	for _, codec := range codecs {
		if err := traffic.ConsumeFranz(ctx, b.Addr(), prefix+"group-"+codec, prefix+codec, n); err != nil {
			t.Fatalf("consume %s: %v", codec, err)
		}
	}
	// Let the last responses leave and the request log catch up.
	time.Sleep(time.Second)
	captureEnd := time.Now()
	stopLive()
	var r liveResult
	select {
	case r = <-done:
		returned = true
	case <-time.After(10 * time.Second):
		t.Fatal("source.Live did not return 10 s after its context ended")
	}
	if r.err != nil {
		t.Fatalf("source.Live: %v", r.err)
	}
	if took := time.Since(captureEnd); took > 3*time.Second {
		t.Errorf("source.Live returned %v after cancel", took)
	}
	res := r.res
	t.Logf("decoded live on %s:\n%s", iface, res.FormatFooter())
	t.Logf("kernel: %d packets kept by the socket filter, %d dropped, ring full %d times; %d read",
		res.Capture.KernelPackets, res.Capture.KernelDrops, res.Capture.QueueFreezes, res.Capture.Packets)

	entries := brokerLogEntries(t, b, port, captureStart, captureEnd)
	if len(entries) < 50 {
		t.Fatalf("request log has only %d requests on port %d in the traffic's window", len(entries), port)
	}
	drops := res.Capture.KernelDrops
	if drops > 0 {
		t.Errorf("the kernel dropped %d packets: requests may be missing below", drops)
	}
	w := res.Wire
	if w.SkippedBytes != 0 || w.Gaps != 0 || w.Partial != 0 || w.Unpaired != 0 || w.DecodeErrors != 0 || w.BatchErrors != 0 {
		t.Errorf("a live capture without kernel drops must decode without loss: %+v", w)
	}
	// Every packet read was counted by the kernel; a few may be kept after
	// the last read and before the socket's close (connection teardown
	// packets: one in one of five full-suite runs), never read.
	if c := res.Capture; c.KernelPackets < c.Packets+c.KernelDrops || c.KernelPackets > c.Packets+c.KernelDrops+4 {
		t.Errorf("kernel kept %d packets, %d read, %d dropped", c.KernelPackets, c.Packets, c.KernelDrops)
	}

	// No request twice: the loopback duplicate filter works.
	byKey := index(r.reqs)
	if d := byKey.duplicates(); d != 0 {
		t.Errorf("%d requests decoded, %d of them twice (same client port, correlation id and API within 1 ms)", len(r.reqs), d)
	}

	// Every logged request is on the wire with the same API and version.
	apis := map[string]int{}
	var matched, within1, compared int
	for _, e := range entries {
		q, ok := byKey.find(e.ClientAddr, e.CorrelationID, e.Time)
		if !ok {
			t.Errorf("logged request not decoded live: %s v%d corr %d from %s", e.APIName, e.APIVersion, e.CorrelationID, e.ClientAddr)
			continue
		}
		matched++
		apis[q.API]++
		if q.APIKey != e.APIKey || q.APIVersion != e.APIVersion {
			t.Errorf("corr %d from %s: live says key %d v%d, log says key %d v%d", e.CorrelationID, e.ClientAddr, q.APIKey, q.APIVersion, e.APIKey, e.APIVersion)
		}
		if q.Answered {
			compared++
			if math.Abs(q.BrokerMs-e.TotalTimeMs) <= 1 {
				within1++
			}
		}
	}
	t.Logf("%d/%d logged requests matched (%v); %d decoded in all; broker-view latency within 1 ms of totalTimeMs: %d/%d",
		matched, len(entries), apis, len(r.reqs), within1, compared)
	for _, want := range []string{"Produce", "Fetch", "Metadata", "ApiVersions", "FindCoordinator", "JoinGroup", "SyncGroup", "OffsetCommit"} {
		if apis[want] == 0 {
			t.Errorf("no %s request matched (%v)", want, apis)
		}
	}

	// Every produced message id, and no other, in the produce requests.
	for _, codec := range codecs {
		topic := prefix + codec
		got := map[string]int{}
		for _, q := range r.reqs {
			if q.API != "Produce" {
				continue
			}
			for _, p := range q.Partitions {
				if p.Topic == topic {
					for _, id := range p.MessageIDs {
						got[id]++
					}
				}
			}
		}
		var missing, extra, twice []string
		for i := range n {
			id := fmt.Sprintf("%s-%d", topic, i)
			if got[id] == 0 {
				missing = append(missing, id)
			} else if got[id] > 1 {
				twice = append(twice, id) // a producer retry would do it; say so
			}
			delete(got, id)
		}
		for id := range got {
			extra = append(extra, id)
		}
		sort.Strings(extra)
		if len(missing) > 0 || len(extra) > 0 {
			t.Errorf("%s: %d message ids missing (%v), %d unexpected (%v)", topic, len(missing), head(missing), len(extra), head(extra))
		}
		if len(twice) > 0 {
			t.Logf("%s: %d message ids in more than one produce request (producer retries?): %v", topic, len(twice), head(twice))
		}
	}
}

func head(s []string) []string { return s[:min(len(s), 5)] }

// liveProduce produces n records to topic (auto-created) with franz-go in
// many small produce requests, record i with the message id
// "<topic>-<i>" (as traffic.ProduceFranz, which sends them all at once).
func liveProduce(ctx context.Context, t *testing.T, addr, topic, codec string, n int) {
	t.Helper()
	c := kgo.NoCompression()
	if codec == "zstd" {
		c = kgo.ZstdCompression()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("kscope-live-producer"), kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(), kgo.MetadataMinAge(100*time.Millisecond), kgo.ProducerBatchCompression(c))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const chunk = 10
	// 1 KiB values: the consumer's fetches are 64 KiB loopback segments.
	pad := []byte(strings.Repeat("kscope ", 150))
	for i := 0; i < n; i += chunk {
		var recs []*kgo.Record
		for j := i; j < min(i+chunk, n); j++ {
			recs = append(recs, &kgo.Record{
				Key:     []byte("key-" + strconv.Itoa(j)),
				Value:   append([]byte(topic+" value "+strconv.Itoa(j)+" "), pad...),
				Headers: []kgo.RecordHeader{{Key: traffic.MessageIDHeader, Value: []byte(topic + "-" + strconv.Itoa(j))}},
			})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce to %s: %v", topic, err)
		}
	}
}

// brokerLogEntries parses the broker's request log: the requests on port
// logged within [from, to].
func brokerLogEntries(t *testing.T, b *lab.Broker, port int, from, to time.Time) []requestlog.Entry {
	t.Helper()
	f, err := os.Open(b.RequestLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := requestlog.Parse(f)
	if err != nil {
		t.Fatalf("request log: %v", err)
	}
	var ours []requestlog.Entry
	for _, e := range entries {
		if strings.HasSuffix(e.BrokerAddr, ":"+strconv.Itoa(port)) && !e.Time.Before(from) && !e.Time.After(to) {
			ours = append(ours, e)
		}
	}
	return ours
}
