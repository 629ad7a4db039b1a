package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// freezeWindow is one injected stall: fsfreeze -f ran from frozeAt to
// frozen, fsfreeze -u from thawAt to thawed.
type freezeWindow struct {
	frozeAt, frozen, thawAt, thawed time.Time
}

func (w freezeWindow) String() string {
	f := "15:04:05.000000"
	return fmt.Sprintf("freeze %s..%s, thaw %s..%s", w.frozeAt.Format(f), w.frozen.Format(f), w.thawAt.Format(f), w.thawed.Format(f))
}

// overlaps reports whether [a, b) overlaps the frozen time, with slack.
func (w freezeWindow) overlaps(a, b time.Time, slack time.Duration) bool {
	return a.Before(w.thawed.Add(slack)) && b.After(w.frozeAt.Add(-slack))
}

// TestExplain is issue 5's scenario: a real broker on an ext4 loop-device
// file system, steady produce load from two clients to several partitions,
// `kscope record` running (live capture and eBPF), and the file system
// frozen for 200, 300 and 500 ms at known moments. `kscope explain` must
// classify at least 90% of the slow produce requests as slow-write or
// lock-wait on the frozen file system, on the partitions being written,
// and find every freeze as a stall within 10 ms; a control run without
// freezes must show no stall at all.
func TestExplain(t *testing.T) {
	b, mnt, dev, logDir := explainBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "explain-stall"

	t.Run("freezes", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "rec")
		windows := recordScenario(ctx, t, b, logDir, dir, topic, func(ctx context.Context) []freezeWindow {
			var ws []freezeWindow
			for _, d := range []time.Duration{200 * time.Millisecond, 300 * time.Millisecond, 500 * time.Millisecond} {
				time.Sleep(800 * time.Millisecond)
				var w freezeWindow
				w.frozeAt = time.Now()
				iotRun(t, "fsfreeze", "-f", mnt)
				w.frozen = time.Now()
				time.Sleep(d)
				w.thawAt = time.Now()
				iotRun(t, "fsfreeze", "-u", mnt)
				w.thawed = time.Now()
				ws = append(ws, w)
			}
			time.Sleep(time.Second)
			return ws
		}, "--jfr", "start", "--pcap")
		for _, w := range windows {
			t.Logf("injected: %s", w)
		}
		t.Cleanup(func() { keepDirOnFailure(t, dir) })
		meta, err := recording.ReadMeta(dir)
		if err != nil {
			t.Fatal(err)
		}
		checkMeta(t, meta, b, dev)
		checkStealRecorded(t, meta, dir)

		// JFR (record --jfr start) saw handler threads wait for the
		// partition locks of the frozen appends.
		if meta.LockWaits == nil || meta.LockWaits.LockWaits == 0 || meta.LockWaits.Error != "" {
			t.Errorf("no lock waits from the broker's flight recording: %+v", meta.LockWaits)
		} else {
			t.Logf("JFR: %d lock waits from %s", meta.LockWaits.LockWaits, meta.LockWaits.Source)
		}
		// The tracer saw the handlers sleep in the frozen file system:
		// the freeze's signature (sb_start_write's per-CPU rwsem) is
		// in the slow writes' evidence.
		t.Run("kernel-waits", func(t *testing.T) {
			findings, _ := runExplain(t, dir)
			frozen := 0
			for _, f := range findings {
				for _, k := range f.KernelWaits {
					if strings.Contains(strings.Join(k.Stack, " "), "percpu_rwsem") {
						frozen++
						break
					}
				}
			}
			t.Logf("%d kernel waits recorded; %d of %d slow requests carry a wait on the frozen file system", meta.Trace.KernelWaits, frozen, len(findings))
			if meta.Trace.KernelWaits == 0 || frozen == 0 {
				t.Errorf("no kernel wait on the frozen file system in the evidence")
			}
		})
		// The measure: the slow requests by the recording's p99.
		t.Run("p99", func(t *testing.T) {
			findings, sum := runExplain(t, dir)
			checkStallFindings(t, findings, sum, windows, dev, topic, false)
		})
		// Stricter: every request of 100 ms or more that was in flight
		// during a freeze. (Requests slow for reasons nothing traces, such
		// as the CPU, are left out and must come out unexplained.)
		t.Run("100ms", func(t *testing.T) {
			findings, sum := runExplain(t, dir, "--slow", "100ms")
			checkStallFindings(t, findings, sum, windows, dev, topic, true)
		})
		// The stalls: one per freeze, its start when writes stopped and its
		// end when they resumed, each within 10 ms.
		_, sum := runExplain(t, dir, "--summary")
		checkStalls(t, sum.Stalls, windows, dev)

		// Without a recording: the kept capture and the iotrace JSON give
		// the same answer.
		t.Run("pcap-and-io", func(t *testing.T) {
			fromDir, sumDir := runExplain(t, dir)
			port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
			var out, errOut bytes.Buffer
			args := []string{"explain", "--pcap", filepath.Join(dir, recording.CaptureFile), "--port", port,
				"--io", filepath.Join(dir, recording.WritesFile), "--io", filepath.Join(dir, recording.JournalFile),
				"--jfr", filepath.Join(dir, recording.JFRFile), "--log-dirs", logDir, "--format", "json", "-q"}
			if code := cli.Main(args, &out, &errOut); code != 0 {
				t.Fatalf("explain --pcap: exit %d: %s", code, errOut.String())
			}
			var fromPcap []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var f explain.Finding
				if !strings.HasPrefix(line, `{"summary"`) && json.Unmarshal([]byte(line), &f) == nil {
					fromPcap = append(fromPcap, fmt.Sprintf("%s/%d %s", f.Client, f.CorrelationID, f.Cause))
				}
			}
			var want []string
			for _, f := range fromDir {
				want = append(want, fmt.Sprintf("%s/%d %s", f.Client, f.CorrelationID, f.Cause))
			}
			if strings.Join(fromPcap, "\n") != strings.Join(want, "\n") {
				t.Errorf("explain --pcap --io found\n%s\nthe recording\n%s", strings.Join(fromPcap, "\n"), strings.Join(want, "\n"))
			}
			t.Logf("explain --pcap --io: the same %d slow requests and causes as the recording (%d produce requests)", len(fromPcap), sumDir.ProduceRequests)
		})

		// A request's timeline names its cause.
		findings, _ := runExplain(t, dir)
		if len(findings) > 0 {
			f := findings[0]
			var out, errOut bytes.Buffer
			id := fmt.Sprintf("%s/%d", f.Client, f.CorrelationID)
			if code := cli.Main([]string{"explain", dir, "--request", id}, &out, &errOut); code != 0 {
				t.Fatalf("explain --request %s: exit %d: %s", id, code, errOut.String())
			}
			t.Logf("timeline of %s:\n%s", id, out.String())
			if !strings.Contains(out.String(), "cause: "+f.Cause) || !strings.Contains(out.String(), "request arrives") {
				t.Errorf("timeline of %s lacks its arrival or cause %s", id, f.Cause)
			}
		}
	})

	t.Run("control", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "rec")
		recordScenario(ctx, t, b, logDir, dir, topic, func(ctx context.Context) []freezeWindow {
			time.Sleep(4 * time.Second)
			return nil
		})
		findings, sum := runExplain(t, dir)
		if len(sum.Stalls) > 0 {
			t.Errorf("control run: %d stalls reported: %+v", len(sum.Stalls), sum.Stalls)
		}
		for _, f := range findings {
			if f.Stall != nil {
				t.Errorf("control run: request %s/%d put on a stall: %s", f.Client, f.CorrelationID, f.Detail)
			}
		}
		t.Logf("control: %d produce requests, p99 %.1f ms, causes %s", sum.ProduceRequests, sum.ThresholdMs, causeCounts(sum))
	})
}

// explainBroker starts a broker with its log dir on a fresh ext4 loop
// device (made with mkfsArgs), topics of 4 partitions.
func explainBroker(t *testing.T, mkfsArgs ...string) (b *lab.Broker, mnt, dev, logDir string) {
	t.Helper()
	iotRequire(t)
	libs := labtest.RequireKafka(t)
	mnt, dev = iotLoopFS(t, "ext4", mkfsArgs...)
	logDir = filepath.Join(mnt, "data")
	b = labtest.Broker(t, lab.BrokerConfig{
		Dir:     filepath.Join(t.TempDir(), "broker"),
		LibsDir: libs,
		LogDirs: []string{logDir},
		// The log flusher looks for topics due a flush (flush.ms) every
		// 100 ms from the start (not 30 s after it); no topic is due but
		// those of TestExplainCauses' park and request-queue scenarios
		// (the broker's default flush.ms, log.flush.interval.ms, would
		// otherwise be the check's interval).
		ExtraProps: map[string]string{"num.partitions": "4", "log.flush.scheduler.interval.ms": "100", "log.initial.task.delay.ms": "0",
			"log.flush.interval.ms": "9223372036854775807"},
	})
	return b, mnt, dev, logDir
}

// recordScenario runs `kscope record` on b while two clients produce to
// topic, calls inject, and ends the recording with SIGINT.
func recordScenario(ctx context.Context, t *testing.T, b *lab.Broker, logDir, dir, topic string, inject func(context.Context) []freezeWindow, recordArgs ...string) []freezeWindow {
	t.Helper()
	port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
	load := startScenarioLoad(ctx, t, b.Addr(), topic)
	defer load.cancel()
	rec := startCLI(ctx, t, "record: broker pid", append([]string{"record", "--pid", strconv.Itoa(b.PID()), "--log-dirs", logDir,
		"--iface", "lo", "--port", port, "--out", dir}, recordArgs...)...)
	close(load.start)
	time.Sleep(500 * time.Millisecond)
	windows := inject(load.ctx)
	produced := load.stop(t)
	time.Sleep(200 * time.Millisecond) // the last responses reach the capture
	if err := rec.stop(t, syscall.SIGINT); err != nil {
		t.Fatalf("kscope record ended with %v on SIGINT: %s", err, rec.errOut())
	}
	t.Logf("produced %d records; kscope record: %s", produced, strings.TrimSpace(rec.errOut()))
	return windows
}

// scenarioLoad is the explain scenarios' produce load: enough
// connections and requests in flight (franz-go's idempotent producer
// pipelines up to 5 per connection) that a freeze holds up more than 1%
// of the requests: the p99 threshold then falls among them.
type scenarioLoad struct {
	ctx      context.Context
	cancel   context.CancelFunc
	start    chan struct{} // closed: the producers start
	wg       sync.WaitGroup
	produced atomic.Int64
	errs     chan error
	clients  []*kgo.Client
}

// startScenarioLoad connects four clients to addr, writes every partition
// of topic once, and readies six producers per client, each producing one
// record with a message-id header every 20 ms once start is closed.
func startScenarioLoad(ctx context.Context, t *testing.T, addr, topic string) *scenarioLoad {
	t.Helper()
	return startLoad(ctx, t, addr, topic, 4, 6)
}

// startLoad is startScenarioLoad with clients clients of perClient
// producers each.
func startLoad(ctx context.Context, t *testing.T, addr, topic string, clients, perClient int) *scenarioLoad {
	t.Helper()
	l := &scenarioLoad{start: make(chan struct{}), errs: make(chan error, clients*perClient)}
	l.ctx, l.cancel = context.WithCancel(ctx)
	t.Cleanup(l.closeClients)
	for c := range clients {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic), kgo.AllowAutoTopicCreation(),
			kgo.RecordPartitioner(kgo.RoundRobinPartitioner()), kgo.ProducerLinger(0), kgo.ClientID(fmt.Sprintf("explain-%d", c)))
		if err != nil {
			t.Fatal(err)
		}
		l.clients = append(l.clients, cl)
		// Every partition exists and has been written before recording.
		for p := range 4 {
			r := &kgo.Record{Value: []byte("warm-up"), Partition: int32(p)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("warm-up: %v", err)
			}
		}
		for g := range perClient {
			l.wg.Add(1)
			go l.produce(cl, fmt.Sprintf("c%d-g%d", c, g))
		}
	}
	return l
}

func (l *scenarioLoad) produce(cl *kgo.Client, name string) {
	defer l.wg.Done()
	<-l.start
	for i := 0; i < 100000 && l.ctx.Err() == nil; i++ {
		id := fmt.Sprintf("%s-%d", name, i)
		r := &kgo.Record{Value: []byte("explain value " + id), Headers: []kgo.RecordHeader{{Key: "message-id", Value: []byte(id)}}}
		if err := cl.ProduceSync(l.ctx, r).FirstErr(); err != nil {
			if l.ctx.Err() == nil {
				l.errs <- err
			}
			return
		}
		l.produced.Add(1)
		time.Sleep(20 * time.Millisecond)
	}
}

// stop ends the load, reports the producers' errors and returns how many
// records were produced.
func (l *scenarioLoad) stop(t *testing.T) int64 {
	t.Helper()
	l.cancel()
	l.wg.Wait()
	close(l.errs)
	for err := range l.errs {
		t.Errorf("producing: %v", err)
	}
	l.closeClients()
	return l.produced.Load()
}

func (l *scenarioLoad) closeClients() {
	for _, cl := range l.clients {
		cl.Close()
	}
	l.clients = nil
}

func runExplain(t *testing.T, dir string, args ...string) ([]*explain.Finding, *explain.Summary) {
	t.Helper()
	var out, errOut bytes.Buffer
	if code := cli.Main(append([]string{"explain", dir, "--format", "json"}, args...), &out, &errOut); code != 0 {
		t.Fatalf("explain %v: exit %d: %s", args, code, errOut.String())
	}
	var findings []*explain.Finding
	var sum *explain.Summary
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if bytes.HasPrefix(line, []byte(`{"summary":`)) {
			var s struct{ Summary *explain.Summary }
			if err := json.Unmarshal(line, &s); err != nil {
				t.Fatal(err)
			}
			sum = s.Summary
			continue
		}
		f := new(explain.Finding)
		if err := json.Unmarshal(line, f); err != nil {
			t.Fatal(err)
		}
		findings = append(findings, f)
	}
	if sum == nil {
		t.Fatalf("explain %v: no summary line", args)
	}
	return findings, sum
}

func causeCounts(s *explain.Summary) string {
	var parts []string
	for _, c := range s.Causes {
		if c.Requests > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", c.Cause, c.Requests))
		}
	}
	if s.Journal > 0 {
		parts = append(parts, fmt.Sprintf("(root journal %d)", s.Journal))
	}
	return strings.Join(parts, ", ")
}

func checkMeta(t *testing.T, m *recording.Meta, b *lab.Broker, dev string) {
	t.Helper()
	if m.Broker.PID != b.PID() || m.Broker.Version == "" || len(m.Broker.LogDirs) != 1 {
		t.Errorf("meta broker: %+v", m.Broker)
	}
	if ld := m.Broker.LogDirs[0]; ld.Device != dev || ld.FSType != "ext4" || !strings.HasPrefix(ld.Source, "/dev/loop") {
		t.Errorf("meta log dir: %+v, want ext4 on %s from a loop device", ld, dev)
	}
	if m.Kernel == "" || m.Start.IsZero() || !m.End.After(m.Start) || m.Clock.TraceClockUncertaintyNs <= 0 || m.Clock.TraceClockOffsetNs <= 0 {
		t.Errorf("meta: kernel %q, %v..%v, clock %+v", m.Kernel, m.Start, m.End, m.Clock)
	}
	if m.Capture.Requests == 0 || m.Trace.Writes == 0 {
		t.Errorf("meta counters: capture %+v trace %+v", m.Capture, m.Trace)
	}
	t.Logf("meta: Kafka %s, %s %s (%s), capture %d packets (%d dropped in the kernel), %d requests; trace %d writes, %d journal events, %d+%d lost",
		m.Broker.Version, m.Broker.LogDirs[0].FSType, m.Broker.LogDirs[0].Source, m.Broker.LogDirs[0].Options,
		m.Capture.Packets, m.Capture.KernelDrops, m.Capture.Requests, m.Trace.Writes, m.Trace.JournalEvents,
		m.Trace.RingbufDrops, m.Trace.JournalRingbufDrops)
}

// checkStealRecorded: record traces hypervisor steal where the kernel
// keeps a steal clock per run queue (this project's VMs do), and every
// interval it counted is in journal.jsonl, named to the task it was taken
// from.
func checkStealRecorded(t *testing.T, m *recording.Meta, dir string) {
	t.Helper()
	t.Logf("trace mode: %s; %d steal intervals >= %v recorded, %d lost", m.Trace.Mode, m.Trace.StealIntervals,
		time.Duration(m.Trace.MinStealNs), m.Trace.StealRingbufDrops)
	if !strings.Contains(m.Trace.Mode, "+ steal") {
		t.Errorf("record did not trace steal: mode %q", m.Trace.Mode)
		return
	}
	if m.Trace.StealRingbufDrops != 0 {
		t.Errorf("%d steal intervals lost", m.Trace.StealRingbufDrops)
	}
	var n, broker int64
	err := recording.ReadIO(filepath.Join(dir, recording.JournalFile), recording.IOHandlers{Steal: func(s *event.CPUSteal) error {
		n++
		if s.Thread != "" {
			broker++
		}
		if s.StolenMs < float64(m.Trace.MinStealNs)/1e6 || !s.End.After(s.Start) {
			t.Errorf("steal interval below the threshold or empty: %+v", *s)
		}
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("journal.jsonl: %d steal intervals, %d of them taken from the broker's threads", n, broker)
	if n != m.Trace.StealIntervals {
		t.Errorf("journal.jsonl holds %d steal intervals, meta.json counts %d", n, m.Trace.StealIntervals)
	}
}

// checkStallFindings: at least 90% of the slow requests are slow-write or
// lock-wait, resting on a write to one of their partitions on the frozen
// device, during a freeze.
func checkStallFindings(t *testing.T, findings []*explain.Finding, sum *explain.Summary, windows []freezeWindow, dev, topic string, inFreezeOnly bool) {
	t.Helper()
	t.Logf("%d produce requests, slow >= %.1f ms (%s): %d; causes: %s; own writes matched by %v; %d of %d segment lookups failed %s",
		sum.ProduceRequests, sum.ThresholdMs, sum.ThresholdFrom, sum.Slow, causeCounts(sum), sum.MatchedBy, sum.IDLookupErrors, sum.IDLookups, sum.FirstLookupError)
	if inFreezeOnly {
		var kept []*explain.Finding
		for _, f := range findings {
			during := false
			for _, w := range windows {
				during = during || w.overlaps(f.Arrival, f.End, 0)
			}
			if during {
				kept = append(kept, f)
				continue
			}
			if ok, _ := stallCaused(f, windows, dev, topic); ok {
				t.Errorf("request %s/%d outside every freeze put on a freeze: %s", f.Client, f.CorrelationID, f.Detail)
			}
			t.Logf("outside the freezes: %s/%d %.1f ms at %s: %s: %s", f.Client, f.CorrelationID, f.LatencyMs,
				f.Arrival.Format("15:04:05.000"), f.Cause, f.Detail)
		}
		findings = kept
	}
	if len(findings) < 10 {
		t.Fatalf("only %d slow requests: the scenario did not stall enough requests to judge", len(findings))
	}
	onFreeze := 0
	jfrEvidence := 0
	for _, f := range findings {
		if len(f.LockWaits) > 0 {
			jfrEvidence++
			if jfrEvidence <= 3 {
				l := f.LockWaits[0]
				t.Logf("JFR evidence of %s/%d (%s via %s): tid %d waited %.1f ms for %s held by tid %d %s: %s", f.Client, f.CorrelationID,
					f.Cause, f.Via, l.TID, l.LatencyMs, l.Monitor, l.OwnerTID, l.Owner, f.Detail)
			}
		}
		for _, c := range f.Commits {
			t.Logf("root journal of %s/%d: %s %s..%s (%.1f ms): %s", f.Client, f.CorrelationID, c.Kind,
				c.Start.Format("15:04:05.000000"), c.End.Format("15:04:05.000000"), c.LatencyMs, f.Detail)
		}
		ok, why := stallCaused(f, windows, dev, topic)
		if ok {
			onFreeze++
		} else {
			t.Logf("not put on a freeze: %s/%d %.1f ms: %s: %s", f.Client, f.CorrelationID, f.LatencyMs, f.Cause, why)
		}
	}
	share := float64(onFreeze) / float64(len(findings))
	t.Logf("%d of %d slow requests (%.1f%%) classified slow-write or lock-wait on a frozen-file-system write", onFreeze, len(findings), 100*share)
	if share < 0.9 {
		t.Errorf("%.1f%% of slow requests put on the freezes, want >= 90%%", 100*share)
	}
}

func stallCaused(f *explain.Finding, windows []freezeWindow, dev, topic string) (bool, string) {
	if f.Cause != explain.CauseSlowWrite && f.Cause != explain.CauseLockWait {
		return false, f.Detail
	}
	for _, p := range f.Partitions {
		if p.Topic != topic {
			continue
		}
		ws := p.Blocking
		if p.Write != nil {
			ws = append(ws, *p.Write)
		}
		for _, w := range ws {
			if w.Dev != dev || w.Topic != p.Topic || w.Partition != p.Partition || w.LatencyMs < 50 {
				continue
			}
			for _, win := range windows {
				if win.overlaps(w.Start, w.End, 10*time.Millisecond) {
					return true, ""
				}
			}
		}
	}
	if qb := f.QueuedBehind; qb != nil && f.Via == explain.ViaConnection {
		// Queued on its connection behind a request whose append hung:
		// that append is on another partition of the topic.
		for _, w := range qb.Writes {
			if w.Dev == dev && w.Topic == topic && w.LatencyMs >= 50 {
				for _, win := range windows {
					if win.overlaps(w.Start, w.End, 10*time.Millisecond) {
						return true, ""
					}
				}
			}
		}
	}
	return false, "no write of >= 50 ms on " + dev + " during a freeze in its evidence: " + f.Detail
}

func checkStalls(t *testing.T, stalls []explain.Stall, windows []freezeWindow, dev string) {
	t.Helper()
	const tol = 10 * time.Millisecond
	matched := make([]bool, len(windows))
	for _, s := range stalls {
		t.Logf("stall on %s: %s..%s (%.0f ms), %d writes, %d slow requests, partitions %v", s.Dev,
			s.Start.Format("15:04:05.000000"), s.End.Format("15:04:05.000000"), s.DurationMs, s.Writes, s.Requests, s.Partitions)
		found := false
		for i, w := range windows {
			if s.Dev != dev || !w.overlaps(s.Start, s.End, tol) {
				continue
			}
			found, matched[i] = true, true
			if s.Start.Before(w.frozeAt.Add(-tol)) || s.Start.After(w.frozen.Add(tol)) {
				t.Errorf("stall starts %s, not within 10 ms of the freeze (%s)", s.Start.Format("15:04:05.000000"), w)
			}
			if s.End.Before(w.thawAt.Add(-tol)) || s.End.After(w.thawed.Add(tol)) {
				t.Errorf("stall ends %s, not within 10 ms of the thaw (%s)", s.End.Format("15:04:05.000000"), w)
			}
		}
		if !found {
			t.Errorf("stall on %s at %s matches no freeze", s.Dev, s.Start.Format("15:04:05.000000"))
		}
	}
	for i, m := range matched {
		if !m {
			t.Errorf("no stall found for %s", windows[i])
		}
	}
}

// TestExplainJournal is issue 5's journal scenario: the broker on ext4
// (data=ordered) next to a process that writes and fsyncs heavily on the
// same file system. The broker's slow writes wait on jbd2 commits: explain
// must tie each slow write it rests a slow request on to the commit that
// overlapped it.
func TestExplainJournal(t *testing.T) {
	const slowAppend = 5 * time.Millisecond
	// The smallest journal: a running transaction fills up fast.
	b, mnt, dev, logDir := explainBroker(t, "-J", "size=4")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := filepath.Join(t.TempDir(), "rec")
	t.Cleanup(func() { keepDirOnFailure(t, dir) })
	var fsyncs atomic.Int64
	recordScenario(ctx, t, b, logDir, dir, "explain-journal", func(ctx context.Context) []freezeWindow {
		// Slow commits: the file system's journal thread gets the CPU
		// only when nothing else wants it, and a busy loop wants CPU 1.
		starveJournal(ctx, t, mnt)
		nctx, stop := context.WithTimeout(ctx, 5*time.Second)
		defer stop()
		fsyncs.Store(neighbour(nctx, t, filepath.Join(mnt, "neighbour")))
		return nil
	})
	t.Logf("neighbour: %d fsyncs", fsyncs.Load())

	// The truth, from the recording's raw files: the broker's appends of
	// 5 ms or more, and the jbd2 commits on its device whose span (from
	// the request to commit, to its end) overlapped each. (Appends of
	// 10 ms or more were 0-7 a run on this VM, too few to judge the join
	// by; of 5 ms or more, 17-43.)
	var commits []event.JournalCommit
	if err := recording.ReadIO(filepath.Join(dir, recording.JournalFile), recording.IOHandlers{Commit: func(c *event.JournalCommit) error {
		if c.Dev == dev && c.Kind == event.KindJBD2Commit {
			commits = append(commits, *c)
		}
		return nil
	}}); err != nil {
		t.Fatal(err)
	}
	want := make(map[string][]string) // tid@start → commit starts
	if err := recording.ReadIO(filepath.Join(dir, recording.WritesFile), recording.IOHandlers{Write: func(w *event.Write) error {
		if w.Op != "write" || w.Topic == "" || w.Latency() < slowAppend {
			return nil
		}
		var starts []string
		for _, c := range commits {
			from := c.Start
			if c.Phases != nil {
				from = from.Add(-time.Duration(c.Phases.RequestDelayMs * float64(time.Millisecond)))
			}
			if from.Before(w.End) && c.End.After(w.Start) {
				starts = append(starts, c.Start.Format(time.RFC3339Nano))
			}
		}
		want[fmt.Sprintf("%d@%s", w.TID, w.Start.Format(time.RFC3339Nano))] = starts
		return nil
	}}); err != nil {
		t.Fatal(err)
	}

	findings, sum := runExplain(t, dir, "--top", "100000", "--slow-write", slowAppend.String())
	t.Logf("%d produce requests, slow >= %.1f ms (%s): %d; causes: %s", sum.ProduceRequests, sum.ThresholdMs, sum.ThresholdFrom, sum.Slow, causeCounts(sum))
	t.Logf("%d commits on %s; %d appends >= %v, %d of them while a commit was pending or running",
		len(commits), dev, sum.SlowWritesTotal, slowAppend, sum.SlowWritesUnderCommit)
	if len(want) < 5 {
		t.Fatalf("only %d appends of %v or more: the scenario did not slow the broker's writes", len(want), slowAppend)
	}
	if sum.SlowWritesUnderCommit == 0 {
		t.Fatal("no slow append overlapped a journal commit")
	}
	if int(sum.SlowWritesTotal) != len(want) {
		t.Errorf("explain lists %d slow appends, the recording has %d", sum.SlowWritesTotal, len(want))
	}
	for _, sw := range sum.SlowWrites {
		key := fmt.Sprintf("%d@%s", sw.TID, sw.Start.Format(time.RFC3339Nano))
		exp, ok := want[key]
		if !ok {
			t.Errorf("explain lists an append the recording does not have as slow: %s", key)
			continue
		}
		var got []string
		for _, c := range sw.Commits {
			got = append(got, c.Start.Format(time.RFC3339Nano))
		}
		// The same set: explain orders commits by when they were
		// requested, the recording by when they started.
		slices.Sort(got)
		slices.Sort(exp)
		if strings.Join(got, ",") != strings.Join(exp, ",") {
			t.Errorf("append %s (%.1f ms): explain ties commits %v, the recording has %v", key, sw.LatencyMs, got, exp)
		}
		t.Logf("append %s-%d %.1f ms %s..%s: %d commits", sw.Topic, sw.Partition, sw.LatencyMs,
			sw.Start.Format("15:04:05.000000"), sw.End.Format("15:04:05.000000"), len(sw.Commits))
	}
	// Slow requests resting on such an append carry its commits.
	for _, f := range findings {
		if f.Root == explain.RootJournal && len(f.Commits) == 0 {
			t.Errorf("%s/%d: root journal without a commit", f.Client, f.CorrelationID)
		}
		t.Logf("%s/%d %.1f ms %s root %q: %s", f.Client, f.CorrelationID, f.LatencyMs, f.Cause, f.Root, f.Detail)
	}
}

// neighbour is a metadata-heavy writer: four goroutines create, write
// and remove small files, each fsyncing every 64th, until ctx ends; it
// returns the number of fsyncs.
func neighbour(ctx context.Context, t *testing.T, dir string) int64 {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	buf := bytes.Repeat([]byte("neighbour "), 4096/10)
	var n atomic.Int64
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for round := 0; ctx.Err() == nil; round++ {
				for i := range 64 {
					p := filepath.Join(dir, fmt.Sprintf("g%d-%d-%d", g, round%4, i))
					f, err := os.Create(p)
					if err != nil {
						t.Error(err)
						return
					}
					f.Write(buf)
					if i == 63 {
						f.Sync()
						n.Add(1)
					}
					f.Close()
				}
				for i := range 64 {
					os.Remove(filepath.Join(dir, fmt.Sprintf("g%d-%d-%d", g, (round+2)%4, i)))
				}
			}
		})
	}
	wg.Wait()
	return n.Load()
}

// starveJournal makes the jbd2 thread of the file system at mnt
// SCHED_IDLE on CPU 1, and keeps CPU 1 busy 300 ms of every second until
// ctx ends: commits that start in a busy spell take until its end, as on
// an overloaded broker. The thread's policy is restored at cleanup.
func starveJournal(ctx context.Context, t *testing.T, mnt string) {
	t.Helper()
	src, err := exec.Command(labtest.Tool("findmnt"), "-n", "-o", "SOURCE", mnt).Output()
	if err != nil {
		t.Fatal(err)
	}
	name := "jbd2/" + filepath.Base(strings.TrimSpace(string(src))) + "-8"
	var pid string
	procs, _ := filepath.Glob("/proc/[0-9]*/comm")
	for _, p := range procs {
		if b, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(b)) == name {
			pid = filepath.Base(filepath.Dir(p))
		}
	}
	if pid == "" {
		t.Fatalf("no %s thread", name)
	}
	iotRun(t, "taskset", "-p", "2", pid)
	iotRun(t, "chrt", "-i", "-p", "0", pid)
	t.Cleanup(func() {
		exec.Command(labtest.Tool("chrt"), "-o", "-p", "0", pid).Run()
		exec.Command(labtest.Tool("taskset"), "-p", "3", pid).Run()
	})
	// A busy spell of 300 ms per second on CPU 1, in a child pinned there.
	hog := exec.CommandContext(ctx, labtest.Tool("taskset"), "-c", "1", "sh", "-c",
		"while :; do end=$(($(date +%s%N)+300000000)); while [ $(date +%s%N) -lt $end ]; do :; done; sleep 0.7; done")
	if err := hog.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { <-ctx.Done(); hog.Process.Kill() }()
	t.Cleanup(func() { hog.Process.Kill(); hog.Wait() })
	t.Logf("starving %s (pid %s) on CPU 1, 300 ms a second", name, pid)
}
