package lab_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/requestlog"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

// TestBrokerTrafficRequestLog runs every codec through a real broker with
// franz-go and the Java producer, consumes with both consumers, and checks
// the broker's own request log saw it all.
func TestBrokerTrafficRequestLog(t *testing.T) {
	b := labtest.Broker(t, lab.BrokerConfig{RequestLog: true})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	addr, libs := b.Addr(), b.LibsDir()
	const n = 20

	var topics []string
	for _, codec := range traffic.Codecs() {
		start := time.Now()
		ft, jt := "franz-"+codec, "java-"+codec
		if err := traffic.ProduceFranz(ctx, addr, ft, n, codec, true); err != nil {
			t.Fatal(err)
		}
		mid := time.Now()
		if err := traffic.JavaProducerPerf(ctx, libs, addr, jt, n, 100, codec); err != nil {
			t.Fatal(err)
		}
		topics = append(topics, ft, jt)
		t.Logf("produced %s: franz-go %v, java %v", codec,
			mid.Sub(start).Round(time.Millisecond), time.Since(mid).Round(time.Millisecond))
	}
	start := time.Now()
	if err := traffic.ConsumeFranz(ctx, addr, "franz-group", "java-zstd", n); err != nil {
		t.Fatal(err)
	}
	t.Logf("franz-go consumer: %v", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	if err := traffic.JavaConsoleConsumer(ctx, libs, addr, "franz-lz4", "java-group", n); err != nil {
		t.Fatal(err)
	}
	t.Logf("java console consumer: %v", time.Since(start).Round(time.Millisecond))

	pid, dir := b.PID(), b.Dir()
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, pid, dir)

	f, err := os.Open(b.RequestLogPath())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := requestlog.Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d request log entries", len(entries))

	produced := map[string]bool{}
	fetched := map[string]map[string]bool{} // client id -> topics
	for _, e := range entries {
		switch e.APIKey {
		case requestlog.KeyProduce:
			for _, tp := range e.TopicPartitions {
				produced[tp.Topic] = true
			}
		case requestlog.KeyFetch:
			if fetched[e.ClientID] == nil {
				fetched[e.ClientID] = map[string]bool{}
			}
			for _, tp := range e.TopicPartitions {
				fetched[e.ClientID][tp.Topic] = true
			}
		}
		// Forwarded requests (auto topic creation) arrive on the
		// CONTROLLER listener; check the clients' own connections.
		if (e.ClientID == "kscope-franz-producer" || e.ClientID == "kscope-java-consumer") && !e.IsForwarded {
			if e.BrokerAddr != addr || !strings.HasPrefix(e.ClientAddr, "127.0.0.1:") || e.TotalTimeMs < 0 || e.Time.IsZero() {
				t.Errorf("entry %s from %s: broker %q client %q total %v time %v",
					e.APIName, e.ClientID, e.BrokerAddr, e.ClientAddr, e.TotalTimeMs, e.Time)
			}
		}
	}
	for _, topic := range topics {
		if !produced[topic] {
			t.Errorf("no produce request for %s in the request log", topic)
		}
	}
	if !fetched["kscope-franz-consumer"]["java-zstd"] {
		t.Errorf("no franz-go fetch of java-zstd; fetches: %v", fetched)
	}
	if !fetched["kscope-java-consumer"]["franz-lz4"] {
		t.Errorf("no java fetch of franz-lz4; fetches: %v", fetched)
	}
}

// TestBrokerAttachRestart covers what `kscope lab broker` needs: finding
// a running broker from its dir, stopping it from there, and starting
// again on formatted storage.
func TestBrokerAttachRestart(t *testing.T) {
	dir := t.TempDir()
	b := labtest.Broker(t, lab.BrokerConfig{Dir: dir})
	a, err := lab.Attach(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.PID() != b.PID() || a.Addr() != b.Addr() {
		t.Fatalf("attached %d %s, started %d %s", a.PID(), a.Addr(), b.PID(), b.Addr())
	}
	if err := a.Stop(); err != nil {
		t.Fatal(err)
	}
	// The broker is our child: b.Stop reaps it (a.Stop cannot).
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, b.PID(), dir)
	if _, err := lab.Attach(dir); err == nil || !strings.Contains(err.Error(), lab.ErrNotRunning.Error()) {
		t.Fatalf("Attach after stop: %v", err)
	}

	b2 := labtest.Broker(t, lab.BrokerConfig{Dir: dir})
	if b2.Addr() != b.Addr() || b2.ClusterID() != b.ClusterID() {
		t.Errorf("restart: %s/%s, first start %s/%s", b2.Addr(), b2.ClusterID(), b.Addr(), b.ClusterID())
	}
	if err := traffic.ProduceFranz(context.Background(), b2.Addr(), "after-restart", 1, "none", false); err != nil {
		t.Fatal(err)
	}
}

// requireGone fails unless the broker pid is dead and no process at all
// still runs with the broker's dir on its command line.
func requireGone(t *testing.T, pid int, dir string) {
	t.Helper()
	if err := syscall.Kill(pid, 0); err == nil && !zombie(pid) {
		t.Errorf("broker pid %d still exists after Stop", pid)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		cmdline, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		args := strings.Split(string(cmdline), "\x00")
		if slices.Contains(args, "kafka.Kafka") && strings.Contains(string(cmdline), dir) {
			t.Errorf("process %s still runs a broker for %s", p, dir)
		}
	}
}

// zombie reports whether pid has exited but not been reaped yet (a
// detached broker is reaped by init, asynchronously).
func zombie(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// TestDetachedBroker is the `kscope lab broker start` / `stop` flow: one
// process starts a detached broker and exits; another attaches and stops it.
func TestDetachedBroker(t *testing.T) {
	if dir := os.Getenv("LAB_DETACH_DIR"); dir != "" {
		b, err := lab.StartBroker(context.Background(), lab.BrokerConfig{Dir: dir, Detach: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("started pid %d", b.PID())
		return // exit, leaving the broker running
	}
	libs := labtest.RequireKafka(t)
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDetachedBroker$", "-test.v")
	cmd.Env = append(os.Environ(), "LAB_DETACH_DIR="+dir, lab.LibsEnv+"="+libs)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("starter: %v\n%s", err, out)
	}
	b, err := lab.Attach(dir)
	if err != nil {
		t.Fatalf("attach after starter exited: %v\n%s", err, out)
	}
	// Never leave it behind, even if an assertion below fails.
	t.Cleanup(func() { _ = b.Stop() })
	if !b.Running() {
		t.Fatal("attached broker not running")
	}
	if err := traffic.ProduceFranz(context.Background(), b.Addr(), "detached", 1, "none", false); err != nil {
		t.Fatal(err)
	}
	if err := b.Stop(); err != nil {
		t.Fatal(err)
	}
	requireGone(t, b.PID(), dir)
}
