package lab_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// requireKafkaVersion is labtest.RequireKafka for another release than the
// pinned one: it skips (fails under CI=true) unless its jars resolve.
func requireKafkaVersion(t *testing.T, version string) string {
	t.Helper()
	labtest.RequireKafka(t) // java, and the policy's checks
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	libs, err := lab.EnsureLibsVersion(ctx, version)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	return libs
}

// startCluster starts a cluster for the test and stops it in t.Cleanup,
// logging the tail of every node's broker.out when the test failed.
func startCluster(t *testing.T, cfg lab.ClusterConfig) *lab.Cluster {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	c, err := lab.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster of %d (Kafka %s) started in %v: %s", len(c.Brokers()), c.Version(), time.Since(start).Round(time.Millisecond), c.Bootstrap())
	t.Cleanup(func() {
		labtest.StopCluster(t, c) // a node killed after the grace is logged, not failed
		if t.Failed() {
			for _, b := range c.Brokers() {
				t.Logf("tail of %s:\n%s", b.OutPath(), tailOf(b.OutPath(), 30))
			}
		}
	})
	return c
}

func tailOf(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestCluster3 runs a 3-node cluster of the pinned release: a topic with
// replication factor 3 takes acks=all writes that read back from another
// node, every partition has 3 in-sync replicas, and Stop leaves no JVM.
func TestCluster3(t *testing.T) {
	libs := labtest.RequireKafka(t)
	dir := t.TempDir()
	c := startCluster(t, lab.ClusterConfig{Dir: dir, Brokers: 3, LibsDir: libs})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	nodes := c.Brokers()
	if len(nodes) != 3 {
		t.Fatalf("%d nodes", len(nodes))
	}
	for i, b := range nodes {
		if b.NodeID() != i+1 || b.Dir() != lab.NodeDir(dir, i+1) || b.ClusterID() != c.ClusterID() || b.Version() != lab.KafkaVersion {
			t.Errorf("node %d: id %d dir %s cluster %s version %s", i+1, b.NodeID(), b.Dir(), b.ClusterID(), b.Version())
		}
	}
	var cs struct {
		Brokers int
		Voters  string
		Nodes   []struct{ ID int }
	}
	if raw, err := os.ReadFile(filepath.Join(dir, lab.ClusterFile)); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &cs); err != nil || cs.Brokers != 3 || len(cs.Nodes) != 3 || strings.Count(cs.Voters, "@127.0.0.1:") != 3 {
		t.Fatalf("cluster.json: %v %+v\n%s", err, cs, raw)
	}
	a, err := lab.AttachCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i, b := range a.Brokers() {
		if b.PID() != nodes[i].PID() || b.Addr() != nodes[i].Addr() || !b.Running() {
			t.Errorf("attached node %d: pid %d %s, started %d %s", i+1, b.PID(), b.Addr(), nodes[i].PID(), nodes[i].Addr())
		}
	}

	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ClientID("kscope-cluster-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	const topic, partitions, n = "replicated", 3, 60
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, partitions, 3
	create.Topics = append(create.Topics, ct)
	create.TimeoutMillis = 30000
	resp, err := create.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.Topics[0].ErrorCode; e != 0 {
		t.Fatalf("create %s: error %d %v", topic, e, resp.Topics[0].ErrorMessage)
	}
	start := time.Now()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("value %d", i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce acks=all: %v", err)
	}
	t.Logf("produced %d records with acks=all in %v", n, time.Since(start).Round(time.Millisecond))

	// Read back through the last node only, with no consumer group.
	cons, err := kgo.NewClient(kgo.SeedBrokers(nodes[2].Addr()), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("kscope-cluster-test-consumer"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records: %v", len(seen), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) {
			if string(r.Value) != "value "+string(r.Key) {
				t.Errorf("record %q = %q", r.Key, r.Value)
			}
			seen[string(r.Key)] = true
		})
	}

	// Every partition: 3 replicas, all in sync (followers catch up within
	// a replica.lag.time.max.ms at worst).
	var isr string
	for {
		isr = checkISR(ctx, cl, topic, partitions, 3)
		if isr == "" || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if isr != "" {
		t.Fatal(isr)
	}

	pids := make([]int, 3)
	for i, b := range nodes {
		pids[i] = b.PID()
	}
	start = time.Now()
	if !labtest.StopCluster(t, c) {
		t.FailNow()
	}
	t.Logf("stopped 3 nodes in %v", time.Since(start).Round(time.Millisecond))
	for i, pid := range pids {
		requireGone(t, pid, nodes[i].Dir())
	}
	if _, err := lab.AttachCluster(dir); err == nil {
		t.Error("AttachCluster after Stop: no error")
	}

	// A restart (as `kscope lab broker start --dir` again): the node count,
	// cluster id and controller quorum come from the dir, the data stays.
	r := startCluster(t, lab.ClusterConfig{Dir: dir, LibsDir: libs})
	if len(r.Brokers()) != 3 || r.ClusterID() != c.ClusterID() {
		t.Fatalf("restart: %d nodes, cluster %s; first start %s", len(r.Brokers()), r.ClusterID(), c.ClusterID())
	}
	for i, b := range r.Brokers() {
		if b.ControllerAddr() != nodes[i].ControllerAddr() {
			t.Errorf("restart: node %d controller %s, first start %s", i+1, b.ControllerAddr(), nodes[i].ControllerAddr())
		}
	}
	if err := traffic.ConsumeFranz(ctx, r.Addrs()[0], "after-restart", topic, n); err != nil {
		t.Fatal(err)
	}
}

// checkISR returns "" when every partition of topic has want replicas,
// all in sync, else what is missing.
func checkISR(ctx context.Context, cl *kgo.Client, topic string, partitions, want int) string {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return err.Error()
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != partitions {
		return fmt.Sprintf("metadata of %s: %+v", topic, resp.Topics)
	}
	for _, p := range resp.Topics[0].Partitions {
		if len(p.Replicas) != want || len(p.ISR) != want {
			return fmt.Sprintf("%s[%d]: replicas %v, ISR %v", topic, p.Partition, p.Replicas, p.ISR)
		}
	}
	return ""
}

// TestBroker391 runs Kafka 3.9.1 (log4j 1 via reload4j, a static quorum):
// traffic round-trips, the process and the broker say 3.9.1, and the
// request log is written and parsed.
func TestBroker391(t *testing.T) {
	const version = "3.9.1"
	libs := requireKafkaVersion(t, version)
	b := labtest.Broker(t, lab.BrokerConfig{Version: version, LibsDir: libs, RequestLog: true, HeapMB: 256})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if b.Version() != version {
		t.Errorf("Broker.Version = %q", b.Version())
	}
	if v, err := hostinfo.BrokerVersion(b.PID()); err != nil || v != version {
		t.Errorf("hostinfo.BrokerVersion = %q, %v", v, err)
	}
	if _, err := os.Stat(filepath.Join(b.Dir(), lab.Log4j1File)); err != nil {
		t.Error(err)
	}
	const n = 20
	if err := traffic.ProduceFranz(ctx, b.Addr(), "v391", n, "zstd", true); err != nil {
		t.Fatal(err)
	}
	if err := traffic.ConsumeFranz(ctx, b.Addr(), "v391-group", "v391", n); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, b.PID(), b.Dir())

	// The broker's own log, through log4j 1: it names its release.
	out, err := os.ReadFile(b.OutPath())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "Kafka version: "+version) {
		t.Errorf("%s does not say \"Kafka version: %s\":\n%s", b.OutPath(), version, tailOf(b.OutPath(), 20))
	}
	f, err := os.Open(b.RequestLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := requestlog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	var produce, fetch int
	for _, e := range entries {
		if e.Time.IsZero() {
			t.Errorf("entry %s without a time", e.APIName)
		}
		for _, tp := range e.TopicPartitions {
			if tp.Topic != "v391" {
				continue
			}
			switch e.APIKey {
			case requestlog.KeyProduce:
				produce++
			case requestlog.KeyFetch:
				fetch++
			}
		}
	}
	t.Logf("%d request log entries, %d produce and %d fetch of v391", len(entries), produce, fetch)
	if produce == 0 || fetch == 0 {
		t.Errorf("request log of 3.9.1: %d produce, %d fetch requests of v391 in %d entries", produce, fetch, len(entries))
	}
}
