package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// coordLine is one of the group coordinator's log lines about a classic
// group's rebalance.
type coordLine struct {
	at         time.Time
	kind       string // prepare, stabilized, assigned
	group      string
	generation int
	reason     string
}

var coordPatterns = map[string]*regexp.Regexp{
	"prepare":    regexp.MustCompile(`Preparing to rebalance group (\S+) in state \S+ with old generation (\d+) \(.*reason: (.*)\)\.`),
	"stabilized": regexp.MustCompile(`Stabilized group (\S+) generation (\d+) with`),
	"assigned":   regexp.MustCompile(`Assignment received from leader \S+ for group (\S+) for generation (\d+)\.`),
}

// coordinatorLog reads the rebalance lines of group from the broker's
// output (log4j's "[yyyy-MM-dd HH:mm:ss,SSS]", local time).
func coordinatorLog(t *testing.T, path, group string) []coordLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []coordLine
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 25 || line[0] != '[' {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05,000", line[1:24], time.Local)
		if err != nil {
			continue
		}
		for kind, re := range coordPatterns {
			m := re.FindStringSubmatch(line)
			if m == nil || m[1] != group {
				continue
			}
			gen, _ := strconv.Atoi(m[2])
			c := coordLine{at: at, kind: kind, group: m[1], generation: gen}
			if kind == "prepare" {
				c.reason = m[3]
			}
			out = append(out, c)
		}
	}
	return out
}

// groupMember starts a Java console consumer in a classic group with a
// 10 s session timeout, reading topic until killed.
func groupMember(ctx context.Context, t *testing.T, libs, addr, topic, group, clientID string) *exec.Cmd {
	t.Helper()
	cmd, err := lab.JavaCommand(ctx, libs, lab.ToolJVMArgs(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", addr, "--topic", topic, "--group", group,
		"--consumer-property", "client.id="+clientID,
		"--consumer-property", "group.protocol=classic",
		"--consumer-property", "session.timeout.ms=10000",
		"--consumer-property", "heartbeat.interval.ms=1000")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = nil, nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

// throttledReader reads topic in group at about perSecond records a
// second, fetching little ahead of what it processed, and commits what it
// processed every second. Its truth of its lag in time: when each fetch's
// first record reached it (kgo's buffering hook, the fetch response's
// time), that record's age by its timestamp.
type throttledReader struct {
	mu      sync.Mutex
	drained bool // the buffer was polled empty: the next record buffered is a fetch's first
	lastAge time.Duration
	// buffered is what it had fetched and not processed when it stopped.
	buffered int64
	// hwm is the highest high watermark its fetches returned.
	hwm int64
}

// waitHighWatermark waits until a fetch of the reader returned a high
// watermark of at least end, or for at most limit: a throttled reader
// fetches every few seconds, and its lag from the wire is as of its last
// fetch, while kafka-consumer-groups reads the log end offset when it is
// asked.
func (r *throttledReader) waitHighWatermark(t *testing.T, end int64, limit time.Duration) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		r.mu.Lock()
		hwm := r.hwm
		r.mu.Unlock()
		if hwm >= end {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the reader's fetches returned no high watermark of %d within %v", end, limit)
}

// OnFetchRecordBuffered is kgo's hook, called as a fetch's records are
// buffered.
func (r *throttledReader) OnFetchRecordBuffered(rec *kgo.Record) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.drained {
		r.lastAge, r.drained = time.Since(rec.Timestamp), false
	}
}

func (r *throttledReader) age() time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastAge
}

func (r *throttledReader) run(ctx context.Context, t *testing.T, addr, topic, group, clientID string, perSecond int) func() {
	r.drained = true
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ClientID(clientID), kgo.FetchMaxPartitionBytes(4096), kgo.FetchMaxBytes(4096),
		kgo.MaxConcurrentFetches(1), kgo.WithHooks(r)}
	if group != "" {
		opts = append(opts, kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
			kgo.AutoCommitInterval(time.Second))
	} else {
		opts = append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			// perSecond/10 records every 100 ms; once kgo's buffer is
			// empty, the next record it buffers is a new fetch's first.
			fetches := cl.PollRecords(ctx, max(1, perSecond/10))
			n := len(fetches.Records())
			r.mu.Lock()
			fetches.EachPartition(func(p kgo.FetchTopicPartition) { r.hwm = max(r.hwm, p.HighWatermark) })
			if cl.BufferedFetchRecords() == 0 {
				r.drained = true
			}
			r.mu.Unlock()
			if n > 0 {
				select {
				case <-ctx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	return func() {
		<-done
		// What it fetched and did not process yet: a fetch in flight is
		// in the buffer a moment later. Its fetch position is what it
		// committed plus that.
		time.Sleep(time.Second)
		r.mu.Lock()
		r.buffered = cl.BufferedFetchRecords()
		r.mu.Unlock()
		if group != "" {
			_ = cl.CommitUncommittedOffsets(context.Background())
		}
		cl.Close()
	}
}

// waitForMembers waits until group is stable with n members: the Java
// consumers take seconds to start on two busy cores. A KIP-848 group is
// described by ConsumerGroupDescribe (DescribeGroups does not describe it).
func waitForMembers(ctx context.Context, t *testing.T, addr, group string, n int, kip848 bool) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	stable := func() bool {
		if kip848 {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			resp, err := req.RequestWith(ctx, cl)
			return err == nil && len(resp.Groups) == 1 && resp.Groups[0].State == "Stable" && len(resp.Groups[0].Members) == n
		}
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, cl)
		return err == nil && len(resp.Groups) == 1 && resp.Groups[0].State == "Stable" && len(resp.Groups[0].Members) == n
	}
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if stable() {
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("group %s not stable with %d members after 90 s", group, n)
}

// describeLag runs Kafka's kafka-consumer-groups --describe and returns
// each partition's CURRENT-OFFSET and LAG.
func describeLag(ctx context.Context, t *testing.T, libs, addr, group string) map[int32][2]int64 {
	t.Helper()
	cmd, err := lab.JavaCommand(ctx, libs, lab.ToolJVMArgs(), "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
		"--bootstrap-server", addr, "--describe", "--group", group)
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kafka-consumer-groups: %v: %s", err, out)
	}
	lag := map[int32][2]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[0] != group {
			continue
		}
		p, err1 := strconv.Atoi(f[2])
		cur, err2 := strconv.ParseInt(f[3], 10, 64)
		l, err3 := strconv.ParseInt(f[5], 10, 64)
		if err1 == nil && err2 == nil && err3 == nil {
			lag[int32(p)] = [2]int64{cur, l}
		}
	}
	t.Logf("kafka-consumer-groups --describe --group %s:\n%s", group, out)
	return lag
}

// produceAt produces 100-byte records to topic at perSecond until ctx
// ends.
func produceAt(ctx context.Context, t *testing.T, addr, topic string, perSecond int) func() int {
	// Small batches: a consumer's fetch of 4 KB then holds a few dozen
	// records, and it fetches often.
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("paced-producer"), kgo.ProducerLinger(0), kgo.ProducerBatchMaxBytes(2048))
	if err != nil {
		t.Fatal(err)
	}
	var n int
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / time.Duration(perSecond/10))
		defer tick.Stop()
		for ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-tick.C:
				for range 10 {
					cl.Produce(ctx, &kgo.Record{Topic: topic, Value: make([]byte, 100)}, nil)
					n++
				}
			}
		}
	}()
	return func() int {
		<-done
		_ = cl.Flush(context.Background())
		cl.Close()
		return n
	}
}

func consumersOf(t *testing.T, pcap string, port int, args ...string) *consumers.Report {
	t.Helper()
	out, errOut, code := runCLI(append([]string{"consumers", "--format", "json", "-q", "--port", strconv.Itoa(port), pcap}, args...))
	if code != 0 {
		t.Fatalf("kscope consumers: exit %d: %s", code, errOut)
	}
	var rep consumers.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

func consumerNamed(rep *consumers.Report, group, client string) *consumers.Consumer {
	for i := range rep.Consumers {
		c := &rep.Consumers[i]
		if (group != "" && c.Group == group) || (group == "" && c.Group == "" && len(c.Clients) > 0 && strings.HasPrefix(c.Clients[0], client+"@")) {
			return c
		}
	}
	return nil
}

// TestConsumers runs, against a real broker while the capture runs, a
// consumer throttled to fall behind a producer, a reader that never
// commits, and a classic group of three Java consumers of which one is
// stopped (SIGSTOP) past its session timeout and one leaves; then, in a
// second capture, a control with none of these. kscope consumers is
// checked against Kafka's own word: kafka-consumer-groups --describe, the
// record timestamps, and the group coordinator's log lines.
func TestConsumers(t *testing.T) {
	libs := labtest.RequireKafka(t)
	labtest.RequireRoot(t)
	dir := t.TempDir()
	const port = 19630
	b := labtest.Broker(t, lab.BrokerConfig{Dir: filepath.Join(dir, "broker"), LibsDir: libs, Port: port})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	profileCreateTopic(ctx, t, b.Addr(), "lagging", 1, nil)
	profileCreateTopic(ctx, t, b.Addr(), "members", 3, nil)
	pcap := filepath.Join(dir, "consumers.pcap")
	stopCapture := labtest.Capture(t, "lo", port, pcap)

	// The members join first: their rebalances to a steady group happen
	// while the lag builds.
	m1 := groupMember(ctx, t, libs, b.Addr(), "members", "members-group", "member-1")
	m2 := groupMember(ctx, t, libs, b.Addr(), "members", "members-group", "member-2")
	m3 := groupMember(ctx, t, libs, b.Addr(), "members", "members-group", "member-3")
	_ = m1
	loadCtx, stopLoad := context.WithTimeout(ctx, 40*time.Second)
	// The producer stops first, and the readers stop once the throttled
	// one has fetched the last high watermark: its lag from the wire is
	// then against the log end offset kafka-consumer-groups reads.
	produceCtx, stopProduce := context.WithTimeout(loadCtx, 36*time.Second)
	defer stopProduce()
	readCtx, stopReading := context.WithTimeout(ctx, 60*time.Second)
	defer stopReading()
	stopProducer := produceAt(produceCtx, t, b.Addr(), "lagging", 400)
	var slow, never throttledReader
	stopSlow := slow.run(readCtx, t, b.Addr(), "lagging", "lagging-group", "throttled", 50)
	stopNever := never.run(readCtx, t, b.Addr(), "lagging", "", "nocommit-reader", 100)
	waitForMembers(ctx, t, b.Addr(), "members-group", 3, false)
	time.Sleep(3 * time.Second) // the group is steady
	stopped := time.Now()
	if err := m2.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(16 * time.Second) // past the 10 s session timeout
	_ = m2.Process.Signal(syscall.SIGCONT)
	t.Logf("member-2 stopped for %v", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(8 * time.Second)            // it rejoins
	_ = m3.Process.Signal(syscall.SIGTERM) // a graceful close: LeaveGroup
	<-loadCtx.Done()
	produced := stopProducer()
	slow.waitHighWatermark(t, int64(produced), 20*time.Second)
	stopReading()
	stopSlow()
	stopNever()
	time.Sleep(3 * time.Second)
	stopCapture()
	stopLoad()
	t.Logf("produced %d records", produced)

	rep := consumersOf(t, pcap, port)
	out, _, _ := runCLI([]string{"consumers", "-q", "--port", strconv.Itoa(port), pcap})
	t.Logf("kscope consumers:\n%s", out)

	t.Run("lag of the throttled consumer", func(t *testing.T) {
		truth := describeLag(ctx, t, libs, b.Addr(), "lagging-group")
		c := consumerNamed(rep, "lagging-group", "")
		if c == nil || len(c.Partitions) != 1 {
			t.Fatalf("no row of lagging-group: %+v", rep.Consumers)
		}
		// kafka-consumer-groups' LAG counts from the committed offset,
		// what the consumer processed; kscope's from its fetch position,
		// which is ahead by what it had fetched and not processed.
		p, want := c.Partitions[0], truth[0]
		slow.mu.Lock()
		buffered := slow.buffered
		slow.mu.Unlock()
		if p.Committed != want[0] {
			t.Errorf("committed %d, kafka-consumer-groups' CURRENT-OFFSET %d", p.Committed, want[0])
		}
		wantLag := want[1] - buffered
		if wantLag < 1000 || math.Abs(float64(p.LagMessages-wantLag)) > 0.01*float64(wantLag) {
			t.Errorf("lag %d messages, kafka-consumer-groups' LAG %d less the %d records fetched and not processed: more than 1%% apart (or no lag to see)",
				p.LagMessages, want[1], buffered)
		}
		t.Logf("lag %d messages; kafka-consumer-groups' LAG %d, less %d fetched and not processed: %d", p.LagMessages, want[1], buffered, wantLag)
		age := slow.age()
		if age < 5*time.Second || math.Abs(p.LagMs-float64(age.Milliseconds())) > 1000 {
			t.Errorf("lag %.0f ms, the record timestamps say %v", p.LagMs, age)
		}
	})
	t.Run("the reader that never commits", func(t *testing.T) {
		c := consumerNamed(rep, "", "nocommit-reader")
		if c == nil || !c.NeverCommits || c.LagMessages == 0 {
			t.Fatalf("nocommit-reader: %+v", c)
		}
		found := false
		for _, f := range rep.Findings {
			found = found || (f.Rule == "never-commits" && strings.Contains(f.Title, "nocommit-reader"))
		}
		if !found {
			t.Errorf("no never-commits finding for it: %+v", rep.Findings)
		}
	})
	t.Run("rebalances against the coordinator's log", func(t *testing.T) {
		checkRebalances(t, rep, coordinatorLog(t, b.OutPath(), "members-group"))
	})

	// The control: the same broker, a producer and a consumer that keeps
	// up, in a group of one that is steady before the capture.
	ctrlCtx, stopCtrl := context.WithTimeout(ctx, 25*time.Second)
	defer stopCtrl()
	stopCtrlProducer := produceAt(ctrlCtx, t, b.Addr(), "lagging", 100)
	var calm throttledReader
	stopCalm := calm.run(ctrlCtx, t, b.Addr(), "lagging", "calm-group", "calm", 100_000)
	time.Sleep(10 * time.Second)
	ctrlPcap := filepath.Join(dir, "control.pcap")
	stopCtrlCapture := labtest.Capture(t, "lo", port, ctrlPcap)
	<-ctrlCtx.Done()
	stopCtrlProducer()
	stopCalm()
	stopCtrlCapture()
	t.Run("control", func(t *testing.T) {
		ctrl := consumersOf(t, ctrlPcap, port)
		if len(ctrl.Rebalances) != 0 || len(ctrl.Findings) != 0 {
			t.Errorf("rebalances %+v, findings %+v", ctrl.Rebalances, ctrl.Findings)
		}
		if c := consumerNamed(ctrl, "calm-group", ""); c == nil || c.MaxLagMs > 5000 {
			t.Errorf("calm-group: %+v", c)
		}
	})
}

// checkRebalances: each rebalance the coordinator logged (a "Preparing to
// rebalance" line) is one kscope found, started within 100 ms of it, by
// the member its reason names, with the join phase (to "Stabilized") and
// the sync phase (to "Assignment received") within 100 ms.
func checkRebalances(t *testing.T, rep *consumers.Report, lines []coordLine) {
	t.Helper()
	byGen := map[int]map[string]coordLine{}
	for _, l := range lines {
		gen := l.generation
		if l.kind == "prepare" {
			gen++ // the generation it prepares
		}
		if byGen[gen] == nil {
			byGen[gen] = map[string]coordLine{}
		}
		byGen[gen][l.kind] = l
	}
	var timedOut, left bool
	for _, rb := range rep.Rebalances {
		if rb.Group != "members-group" {
			continue
		}
		log := byGen[int(rb.Generation)]
		prep, ok := log["prepare"]
		if !ok {
			t.Errorf("generation %d: kscope found a rebalance the coordinator did not log: %+v", rb.Generation, rb)
			continue
		}
		t.Logf("generation %d: kscope %s by %s at %s (join %.0f ms, sync %.0f ms); coordinator: prepare %s (%s), stabilized %s, assigned %s",
			rb.Generation, rb.Trigger, rb.Member, rb.Start.Format("15:04:05.000"), rb.JoinMs, rb.SyncMs, prep.at.Format("15:04:05.000"),
			prep.reason, log["stabilized"].at.Format("15:04:05.000"), log["assigned"].at.Format("15:04:05.000"))
		within := func(what string, got, want time.Duration) {
			if d := got - want; d < -100*time.Millisecond || d > 100*time.Millisecond {
				t.Errorf("generation %d: %s %v, the coordinator's %v", rb.Generation, what, got, want)
			}
		}
		within("start", rb.Start.Sub(prep.at), 0)
		if st, ok := log["stabilized"]; ok {
			within("join phase", time.Duration(rb.JoinMs*float64(time.Millisecond)), st.at.Sub(prep.at))
			if as, ok := log["assigned"]; ok {
				within("sync phase", time.Duration(rb.SyncMs*float64(time.Millisecond)), as.at.Sub(st.at))
			}
		}
		if rb.Member != "" && (rb.Trigger == "timed out" || rb.Trigger == "left") && !strings.Contains(prep.reason, rb.Member) {
			t.Errorf("generation %d: kscope names member %s, the coordinator's reason: %s", rb.Generation, rb.Member, prep.reason)
		}
		timedOut = timedOut || (rb.Trigger == "timed out" && strings.Contains(rb.Client, "member-2"))
		left = left || (rb.Trigger == "left" && strings.Contains(rb.Client, "member-3"))
	}
	for gen, log := range byGen {
		if _, ok := log["prepare"]; ok && !hasGeneration(rep, "members-group", gen) {
			t.Errorf("the coordinator rebalanced into generation %d (%s); kscope did not find it", gen, log["prepare"].reason)
		}
	}
	if !timedOut || !left {
		t.Errorf("found the member-2 timeout: %v, the member-3 leave: %v", timedOut, left)
	}
}

func hasGeneration(rep *consumers.Report, group string, gen int) bool {
	for _, rb := range rep.Rebalances {
		if rb.Group == group && int(rb.Generation) == gen {
			return true
		}
	}
	return false
}

var _ = fmt.Sprintf
