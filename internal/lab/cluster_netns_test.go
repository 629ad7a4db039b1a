package lab_test

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// requireIsolation skips (fails under CI=true) unless this machine can
// give nodes namespaces and file systems of their own.
func requireIsolation(t *testing.T) {
	t.Helper()
	labtest.RequireRoot(t)
	for _, tool := range []string{"ip", "losetup", "mkfs.ext4"} {
		if labtest.Tool(tool) == "" {
			labtest.Unavailable(t, "%s not found (ClusterConfig.Netns and FS need it)", tool)
		}
	}
}

// startIsolated starts cfg's cluster bounded by ctx and stops it in
// t.Cleanup (registered after t.TempDir's, so it runs first), logging
// the nodes' broker.out when the test failed.
func startIsolated(ctx context.Context, t *testing.T, cfg lab.ClusterConfig) *lab.Cluster {
	t.Helper()
	start := time.Now()
	c, err := lab.StartCluster(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cluster of %d started in %v: %s (bridge %s %s)", len(c.Brokers()), time.Since(start).Round(time.Millisecond), c.Bootstrap(), c.Bridge(), c.Subnet())
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

// TestClusterNetnsFS runs a 3-node cluster with every node in its own
// network namespace and on its own ext4 loop device: clients in the root
// namespace see the nodes at their namespace addresses, replication
// crosses node 2's veth (its host end counts the bytes), each log dir is
// its own mount, Stop (with one file system frozen) leaves nothing behind,
// and a restart on the same dir finds the data.
func TestClusterNetnsFS(t *testing.T) {
	requireIsolation(t)
	libs := labtest.RequireKafka(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cfg := lab.ClusterConfig{Dir: dir, Brokers: 3, LibsDir: libs, Netns: true, FS: "ext4", FSSizeMB: 512}
	c := startIsolated(ctx, t, cfg)
	nodes := c.Brokers()
	checkIsolatedNodes(t, c)
	checkMetadataAddrs(ctx, t, nodes)

	const topic = "isolated"
	n := produceAcrossNode2(ctx, t, c, topic)

	// Stop with node 3's file system frozen: Stop thaws before it stops.
	if err := lab.FreezeFS(nodes[2].MountPoint()); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if !labtest.StopCluster(t, c) {
		t.FailNow()
	}
	t.Logf("stopped in %v", time.Since(start).Round(time.Millisecond))
	checkIsolationGone(t, dir, c.Bridge(), nodes)

	// A restart on the same dir: same names, addresses and file systems,
	// the data still there. Stopped as `kscope lab broker stop` does, from
	// an attached Cluster.
	r := startIsolated(ctx, t, cfg)
	if r.ClusterID() != c.ClusterID() || r.Bridge() != c.Bridge() || r.Subnet() != c.Subnet() {
		t.Errorf("restart: cluster %s bridge %s %s, first start %s %s %s", r.ClusterID(), r.Bridge(), r.Subnet(), c.ClusterID(), c.Bridge(), c.Subnet())
	}
	for i, b := range r.Brokers() {
		if b.Addr() != nodes[i].Addr() || b.Netns() != nodes[i].Netns() || b.HostIf() != nodes[i].HostIf() || b.MountPoint() != nodes[i].MountPoint() {
			t.Errorf("restart: node %d %s %s %s %s, first start %s %s %s %s", i+1, b.Addr(), b.Netns(), b.HostIf(), b.MountPoint(),
				nodes[i].Addr(), nodes[i].Netns(), nodes[i].HostIf(), nodes[i].MountPoint())
		}
	}
	checkIsolatedNodes(t, r)
	consumeAll(ctx, t, r.Addrs(), topic, n)
	a, err := lab.AttachCluster(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	checkIsolationGone(t, dir, c.Bridge(), nodes)
	if _, err := lab.AttachCluster(dir); !errors.Is(err, lab.ErrNotRunning) {
		t.Errorf("AttachCluster after stop: %v", err)
	}
	if err := lab.Cleanup(dir); err != nil { // a second stop: nothing to do
		t.Errorf("Cleanup after stop: %v", err)
	}
}

// produceAcrossNode2 creates topic with 3 replicas per partition,
// partition 0 led by node 2, produces to it with acks=all and checks the
// bytes that crossed node 2's host interface; it returns the number of
// records produced.
func produceAcrossNode2(ctx context.Context, t *testing.T, c *lab.Cluster, topic string) int {
	t.Helper()
	node2 := c.Brokers()[1]
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.Addrs()...), kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.MetadataMinAge(100*time.Millisecond), kgo.ClientID("kscope-netns-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	// Partition 0 is led by node 2, the others follow on it: node 2 both
	// receives every record and sends partition 0's to two followers.
	createAssigned(ctx, t, cl, topic, [][]int32{{2, 1, 3}, {1, 3, 2}, {3, 2, 1}})
	for {
		isr := checkISR(ctx, cl, topic, 3, 3)
		if isr == "" {
			break
		}
		if ctx.Err() != nil {
			t.Fatal(isr)
		}
		time.Sleep(200 * time.Millisecond)
	}
	const perPartition, size = 100, 4096
	rx0, tx0 := counters(t, node2.HostIf())
	start := time.Now()
	var recs []*kgo.Record
	for p := range int32(3) {
		for i := range perPartition {
			v := make([]byte, size)
			_, _ = rand.Read(v) // incompressible
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: []byte(fmt.Sprintf("%d-%d", p, i)), Value: v})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce acks=all: %v", err)
	}
	rx1, tx1 := counters(t, node2.HostIf())
	t.Logf("produced %d x %d B with acks=all in %v; %s rx +%d B, tx +%d B", len(recs), size,
		time.Since(start).Round(time.Millisecond), node2.HostIf(), rx1-rx0, tx1-tx0)
	// acks=all with 3 in sync: every record reached node 2 (tx on the
	// host end: towards the node), and partition 0's left it twice (rx).
	if total := uint64(len(recs) * size); tx1-tx0 < total {
		t.Errorf("%s tx grew by %d B, less than the %d B node 2 replicated", node2.HostIf(), tx1-tx0, total)
	}
	if p0 := uint64(perPartition * size); rx1-rx0 < 2*p0 {
		t.Errorf("%s rx grew by %d B, less than twice the %d B of partition 0 node 2 leads", node2.HostIf(), rx1-rx0, p0)
	}

	return len(recs)
}

// checkIsolatedNodes checks every node runs in its namespace at its own
// address in the cluster's subnet, behind its own host interface on the
// bridge, with its log dir a mount of its own loop device's ext4.
func checkIsolatedNodes(t *testing.T, c *lab.Cluster) {
	t.Helper()
	subnet, err := netip.ParsePrefix(c.Subnet())
	if err != nil {
		t.Fatalf("subnet %q: %v", c.Subnet(), err)
	}
	seen := map[string]int{}
	for _, b := range c.Brokers() {
		id := b.NodeID()
		ip, err := netip.ParseAddr(b.IP())
		if err != nil || !subnet.Contains(ip) || b.Addr() != net.JoinHostPort(b.IP(), "9092") || b.ControllerAddr() != net.JoinHostPort(b.IP(), "9093") {
			t.Errorf("node %d: ip %s addr %s controller %s, subnet %s", id, b.IP(), b.Addr(), b.ControllerAddr(), subnet)
		}
		for _, name := range []string{b.Netns(), b.HostIf(), b.IP(), b.Device(), b.MountPoint()} {
			if name == "" || seen[name] != 0 {
				t.Errorf("node %d: %q empty or also node %d's", id, name, seen[name])
			}
			seen[name] = id
		}
		if len(b.HostIf()) > 15 {
			t.Errorf("node %d: interface name %q longer than 15", id, b.HostIf())
		}
		if m, err := os.Readlink("/sys/class/net/" + b.HostIf() + "/master"); err != nil || filepath.Base(m) != c.Bridge() {
			t.Errorf("node %d: %s's master %q (%v), want bridge %s", id, b.HostIf(), m, err, c.Bridge())
		}
		if !sameFile("/proc/"+strconv.Itoa(b.PID())+"/ns/net", "/run/netns/"+b.Netns()) {
			t.Errorf("node %d: pid %d is not in namespace %s", id, b.PID(), b.Netns())
		}
		logDir := b.LogDirs()[0]
		m, err := hostinfo.MountOf(0, logDir)
		if err != nil || b.MountPoint() != logDir || m.MountPoint != logDir || m.FSType != "ext4" || m.Source != b.Device() || b.FSType() != "ext4" {
			t.Errorf("node %d: log dir %s on %+v (%v); broker says %s %s %s", id, logDir, m, err, b.FSType(), b.Device(), b.MountPoint())
		}
		back, err := os.ReadFile("/sys/block/" + filepath.Base(b.Device()) + "/loop/backing_file")
		if want := filepath.Join(b.Dir(), lab.FSImageFile); err != nil || strings.TrimSpace(string(back)) != want {
			t.Errorf("node %d: %s backed by %q (%v), want %s", id, b.Device(), back, err, want)
		}
	}
}

// sameFile reports whether two paths name one inode (for namespaces: the
// same namespace).
func sameFile(a, b string) bool {
	var sa, sb syscall.Stat_t
	return syscall.Stat(a, &sa) == nil && syscall.Stat(b, &sb) == nil && sa.Dev == sb.Dev && sa.Ino == sb.Ino
}

// checkMetadataAddrs asks each node, from the root namespace, for the
// cluster's brokers: all of them, each at its namespace address.
func checkMetadataAddrs(ctx context.Context, t *testing.T, nodes []*lab.Broker) {
	t.Helper()
	for _, seed := range nodes {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed.Addr()), kgo.ClientID("kscope-netns-metadata"))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
		cl.Close()
		if err != nil {
			t.Fatalf("metadata from %s: %v", seed.Addr(), err)
		}
		got := map[int32]string{}
		for _, b := range resp.Brokers {
			got[b.NodeID] = net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))
		}
		for _, b := range nodes {
			if got[int32(b.NodeID())] != b.Addr() {
				t.Errorf("metadata from %s: brokers %v, want node %d at %s", seed.Addr(), got, b.NodeID(), b.Addr())
			}
		}
		if len(got) != len(nodes) {
			t.Errorf("metadata from %s: %d brokers %v", seed.Addr(), len(got), got)
		}
	}
}

// createAssigned creates topic with partition p's replicas assign[p], the
// first its preferred leader.
func createAssigned(ctx context.Context, t *testing.T, cl *kgo.Client, topic string, assign [][]int32) {
	t.Helper()
	req := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = topic, -1, -1
	for p, replicas := range assign {
		ra := kmsg.NewCreateTopicsRequestTopicReplicaAssignment()
		ra.Partition, ra.Replicas = int32(p), replicas
		ct.ReplicaAssignment = append(ct.ReplicaAssignment, ra)
	}
	req.Topics = append(req.Topics, ct)
	req.TimeoutMillis = 30000
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if e := resp.Topics[0].ErrorCode; e != 0 {
		t.Fatalf("create %s: error %d %v", topic, e, resp.Topics[0].ErrorMessage)
	}
}

func counters(t *testing.T, ifname string) (rx, tx uint64) {
	t.Helper()
	rx, tx, err := lab.LinkCounters(ifname)
	if err != nil {
		t.Fatal(err)
	}
	return rx, tx
}

// consumeAll reads topic from the start, without a group, until it has n
// distinct keys.
func consumeAll(ctx context.Context, t *testing.T, addrs []string, topic string, n int) {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("kscope-netns-consumer"))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]bool{}
	for len(seen) < n {
		fs := cons.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %d of %d records after the restart: %v", len(seen), n, ctx.Err())
		}
		fs.EachError(func(tp string, p int32, err error) { t.Fatalf("fetch %s[%d]: %v", tp, p, err) })
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Key)] = true })
	}
}

// checkIsolationGone checks that nothing the cluster in dir made is left:
// namespaces, host interfaces, the bridge, mounts under dir, loop
// devices backed by files under dir.
func checkIsolationGone(t *testing.T, dir, bridge string, nodes []*lab.Broker) {
	t.Helper()
	for _, b := range nodes {
		if _, err := os.Stat("/run/netns/" + b.Netns()); err == nil {
			t.Errorf("namespace %s still exists", b.Netns())
		}
		if _, err := net.InterfaceByName(b.HostIf()); err == nil {
			t.Errorf("interface %s still exists", b.HostIf())
		}
	}
	if _, err := net.InterfaceByName(bridge); err == nil {
		t.Errorf("bridge %s still exists", bridge)
	}
	ms, err := hostinfo.Mounts(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if strings.HasPrefix(m.MountPoint, dir+"/") {
			t.Errorf("%s still mounted (%s)", m.MountPoint, m.Source)
		}
	}
	files, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, f := range files {
		if back, err := os.ReadFile(f); err == nil && strings.HasPrefix(string(back), dir+"/") {
			t.Errorf("%s still attached to %s", f, strings.TrimSpace(string(back)))
		}
	}
}
