package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/clientzoo"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// kip848Member starts a Java console consumer in a KIP-848 group
// (group.protocol=consumer): its session timeout and heartbeat interval
// are the broker's, not the client's.
func kip848Member(ctx context.Context, t *testing.T, libs, addr, topic, group, clientID string) *exec.Cmd {
	t.Helper()
	cmd, err := lab.JavaCommand(ctx, libs, lab.ToolJVMArgs(), "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", addr, "--topic", topic, "--group", group,
		"--consumer-property", "client.id="+clientID,
		"--consumer-property", "group.protocol=consumer")
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

// The broker's KIP-848 settings of TestConsumersKIP848: a 10 s session
// timeout and 1 s heartbeats (the defaults, 45 s and 5 s, are also the
// minimums, and would make the test long).
var kip848Props = map[string]string{
	"group.consumer.session.timeout.ms":        "10000",
	"group.consumer.min.session.timeout.ms":    "5000",
	"group.consumer.heartbeat.interval.ms":     "1000",
	"group.consumer.min.heartbeat.interval.ms": "1000",
}

// TestConsumersKIP848 is issue 36's proof for what TestConsumers does not
// cover, on one broker (Kafka 4.x, the lab's pinned release): a KIP-848
// group of three Java consumers (group.protocol=consumer) of which one is
// stopped with SIGSTOP past the broker's session timeout and one leaves,
// checked against the group coordinator's log lines, then one stopped for
// less than the timeout while another leaves, which the next epoch waits
// for (named the slowest, and silent); and a librdkafka
// consumer (confluent-kafka) throttled to fall behind a producer in a
// classic group, whose lag is checked against kafka-consumer-groups and
// the client's own statistics.
func TestConsumersKIP848(t *testing.T) {
	libs := labtest.RequireKafka(t)
	labtest.RequireRoot(t)
	if v, err := lab.LibsVersion(libs); err != nil || !strings.HasPrefix(v, "4.") {
		t.Fatalf("the lab's Kafka is %q (%v): KIP-848 groups need 4.x", v, err)
	}
	dir := t.TempDir()
	const port = 19640
	b := labtest.Broker(t, lab.BrokerConfig{Dir: filepath.Join(dir, "broker"), LibsDir: libs, Port: port, ExtraProps: kip848Props})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tools, err := clientzoo.EnsureTools(ctx, []clientzoo.Client{clientzoo.LibrdkafkaDefaults("probe", "probe")})
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	profileCreateTopic(ctx, t, b.Addr(), "kip848-members", 3, nil)
	profileCreateTopic(ctx, t, b.Addr(), "rdkafka-lagging", 1, nil)
	pcap := filepath.Join(dir, "kip848.pcap")
	stopCapture := labtest.Capture(t, "lo", port, pcap)

	const group = "kip848-group"
	m1 := kip848Member(ctx, t, libs, b.Addr(), "kip848-members", group, "member-1")
	m2 := kip848Member(ctx, t, libs, b.Addr(), "kip848-members", group, "member-2")
	m3 := kip848Member(ctx, t, libs, b.Addr(), "kip848-members", group, "member-3")
	loadCtx, stopLoad := context.WithTimeout(ctx, 57*time.Second)
	defer stopLoad()
	produceCtx, stopProduce := context.WithTimeout(loadCtx, 50*time.Second)
	defer stopProduce()
	stopProducer := produceAt(produceCtx, t, b.Addr(), "rdkafka-lagging", 400)
	// Bounded by its own deadline (and ctx): it stops at a quiet moment after it.
	rd := startRdkafkaReader(ctx, t, tools.Python, b.Addr(), "rdkafka-lagging", "rdkafka-group", "rdkafka-throttled", 50, 54*time.Second)
	waitForMembers(ctx, t, b.Addr(), group, 3, true)
	time.Sleep(3 * time.Second) // the group is steady
	stopped := time.Now()
	if err := m2.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(14 * time.Second) // past the 10 s session timeout
	_ = m2.Process.Signal(syscall.SIGCONT)
	t.Logf("member-2 stopped for %v", time.Since(stopped).Round(time.Millisecond))
	time.Sleep(6 * time.Second)            // it rejoins
	_ = m3.Process.Signal(syscall.SIGTERM) // a graceful close: a leave heartbeat (epoch -1)
	time.Sleep(3 * time.Second)
	// member-1 stopped for less than the session timeout while member-2
	// leaves: the group's next epoch waits for member-1 to reconcile,
	// and kscope must say why it was slow (silent on its side).
	stopped = time.Now()
	_ = m1.Process.Signal(syscall.SIGSTOP)
	time.Sleep(500 * time.Millisecond)
	_ = m2.Process.Signal(syscall.SIGTERM)
	time.Sleep(6 * time.Second)
	_ = m1.Process.Signal(syscall.SIGCONT)
	t.Logf("member-1 stopped for %v", time.Since(stopped).Round(time.Millisecond))
	<-loadCtx.Done()
	produced := stopProducer()
	rdRes := rd.wait(t)
	time.Sleep(3 * time.Second)
	stopCapture()
	t.Logf("produced %d records; librdkafka reader: %+v", produced, rdRes.summary())

	rep := consumersOf(t, pcap, port, "--group-session-timeout", "10s")
	out, _, _ := runCLI([]string{"consumers", "-q", "--port", strconv.Itoa(port), "--group-session-timeout", "10s", pcap})
	t.Logf("kscope consumers:\n%s", out)

	t.Run("KIP-848 rebalances against the coordinator's log", func(t *testing.T) {
		checkKIP848Rebalances(t, rep, kip848CoordinatorLog(t, b.OutPath(), group), group)
	})
	t.Run("the slowest member's silence", func(t *testing.T) { checkSlowestSilent(t, rep, group) })
	t.Run("librdkafka lag", func(t *testing.T) {
		checkRdkafkaLag(ctx, t, rep, rdRes, describeLag(ctx, t, libs, b.Addr(), "rdkafka-group"))
	})
}

// kip848Epoch is what the group coordinator's log says of one rise of a
// KIP-848 group's epoch: the line that caused it (a member joined, left,
// or was fenced when its session expired), the bump, and the target
// assignment computed for it.
type kip848Epoch struct {
	epoch                   int32
	trigger, member         string
	cause, bumped, computed time.Time
}

var kip848Patterns = []struct {
	kind string
	re   *regexp.Regexp
}{
	{"joined", regexp.MustCompile(`\[GroupId (\S+)\] Member (\S+) joins the consumer group`)},
	{"left", regexp.MustCompile(`\[GroupId (\S+)\] Member (\S+) left the consumer group`)},
	{"timed out", regexp.MustCompile(`\[GroupId (\S+)\] Member (\S+) fenced from the group because the member session expired`)},
	{"bumped", regexp.MustCompile(`\[GroupId (\S+)\] Bumped group epoch to (\d+)`)},
	{"computed", regexp.MustCompile(`\[GroupId (\S+)\] Computed a new target assignment for epoch (\d+)`)},
}

// kip848CoordinatorLog reads the epochs of group from the broker's
// output (log4j's "[yyyy-MM-dd HH:mm:ss,SSS]", local time): Kafka 4.x's
// GroupMetadataManager logs these lines at INFO.
func kip848CoordinatorLog(t *testing.T, path, group string) map[int32]*kip848Epoch {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	epochs := map[int32]*kip848Epoch{}
	var cause *kip848Epoch // the last cause line, waiting for its bump
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if len(line) < 25 || line[0] != '[' || !strings.Contains(line, "[GroupId "+group+"]") {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05,000", line[1:24], time.Local)
		if err != nil {
			continue
		}
		for _, p := range kip848Patterns {
			m := p.re.FindStringSubmatch(line)
			if m == nil || m[1] != group {
				continue
			}
			t.Logf("coordinator %s: %s %s", at.Format("15:04:05.000"), p.kind, m[2])
			switch p.kind {
			case "bumped":
				n, _ := strconv.Atoi(m[2])
				e := &kip848Epoch{epoch: int32(n), bumped: at}
				if cause != nil {
					e.trigger, e.member, e.cause = cause.trigger, cause.member, cause.cause
				}
				epochs[e.epoch], cause = e, nil
			case "computed":
				n, _ := strconv.Atoi(m[2])
				if e := epochs[int32(n)]; e != nil {
					e.computed = at
				}
			default:
				cause = &kip848Epoch{trigger: p.kind, member: m[2], cause: at}
			}
		}
	}
	return epochs
}

// checkKIP848Rebalances: every epoch the coordinator bumped is a
// rebalance kscope found and no other; each started by the member and in
// the way the coordinator's log says; its start within 100 ms of the
// coordinator's line of the cause (or, for a join whose request waited
// in the broker longer, that line falls between the request's arrival
// and its answer: the coordinator handled it then); its first phase (until the
// coordinator answered with the new epoch) ending within 100 ms of the
// line saying it computed the epoch's target assignment (1 s for the
// group's first epoch), and not before it. The member stopped with SIGSTOP is found timed out, the one closed
// is found leaving.
func checkKIP848Rebalances(t *testing.T, rep *consumers.Report, epochs map[int32]*kip848Epoch, group string) {
	t.Helper()
	if len(epochs) == 0 {
		t.Fatalf("no epoch of %s in the coordinator's log", group)
	}
	found := map[int32]bool{}
	var timedOut, left bool
	for _, rb := range rep.Rebalances {
		if rb.Group != group {
			continue
		}
		found[rb.Generation] = true
		e := epochs[rb.Generation]
		if e == nil {
			t.Errorf("epoch %d: kscope found a rebalance the coordinator did not log: %+v", rb.Generation, rb)
			continue
		}
		answered := rb.Start.Add(time.Duration(rb.JoinMs * float64(time.Millisecond)))
		t.Logf("epoch %d: kscope %s by %s (%s) at %s, answered %s, all reached after %.0f ms; coordinator: %s %s at %s, bumped %s, computed %s; %s",
			rb.Generation, rb.Trigger, rb.Member, rb.Client, rb.Start.Format("15:04:05.000"), answered.Format("15:04:05.000"), rb.TotalMs,
			e.trigger, e.member, e.cause.Format("15:04:05.000"), e.bumped.Format("15:04:05.000"), e.computed.Format("15:04:05.000"), rb.Detail)
		if rb.Trigger != e.trigger || rb.Member != e.member {
			t.Errorf("epoch %d: kscope says %s %s, the coordinator %s %s", rb.Generation, rb.Member, rb.Trigger, e.member, e.trigger)
		}
		// A join's own answer carries the new epoch: the coordinator
		// handled it while that request was in the broker.
		inJoin := rb.Trigger == "joined" && !e.cause.Before(rb.Start) && !e.cause.After(answered)
		if d := rb.Start.Sub(e.cause).Abs(); d > 100*time.Millisecond && !inJoin {
			t.Errorf("epoch %d: started %s, the coordinator's %s line %s (%v apart)", rb.Generation, rb.Start.Format("15:04:05.000"),
				e.trigger, e.cause.Format("15:04:05.000"), d)
		}
		if !e.computed.IsZero() {
			// The group's first epoch is answered only once the
			// coordinator has written the new group's records, the
			// first to its __consumer_offsets partition on a fresh
			// broker: up to a few hundred ms after it logged the
			// computation on two busy cores. The answer is what kscope
			// times; the line only bounds it from below there.
			tolerance := 100 * time.Millisecond
			if rb.Generation == 1 {
				tolerance = time.Second
			}
			if d := answered.Sub(e.computed); d < -10*time.Millisecond || d > tolerance {
				t.Errorf("epoch %d: answered with it at %s, the coordinator computed its assignment at %s (%v apart)", rb.Generation,
					answered.Format("15:04:05.000"), e.computed.Format("15:04:05.000"), d)
			}
		}
		timedOut = timedOut || (rb.Trigger == "timed out" && strings.HasPrefix(rb.Client, "member-2@") &&
			strings.Contains(rb.Detail, "no heartbeat since") && strings.Contains(rb.Detail, "session timeout 10s"))
		left = left || (rb.Trigger == "left" && strings.HasPrefix(rb.Client, "member-3@"))
	}
	for n, e := range epochs {
		if !found[n] {
			t.Errorf("the coordinator bumped %s to epoch %d (%s %s); kscope did not find it", group, n, e.member, e.trigger)
		}
	}
	if !timedOut || !left {
		t.Errorf("found the member-2 timeout (named, with its last heartbeat): %v, the member-3 leave: %v", timedOut, left)
	}
}

// checkSlowestSilent: the rebalance member-2's leave started waited for
// member-1, stopped meanwhile; kscope names member-1 the slowest and says
// it was silent.
func checkSlowestSilent(t *testing.T, rep *consumers.Report, group string) {
	t.Helper()
	for _, rb := range rep.Rebalances {
		if rb.Group != group || rb.Trigger != "left" || !strings.HasPrefix(rb.Client, "member-2@") {
			continue
		}
		t.Logf("epoch %d: slowest %s after %.0f ms: %s", rb.Generation, rb.SlowestClient, rb.SlowestMs, rb.SlowestWhy)
		if !strings.HasPrefix(rb.SlowestClient, "member-1@") || rb.SlowestMs < 4000 || !strings.Contains(rb.SlowestWhy, "no group request from it") {
			t.Errorf("epoch %d: the slowest %s after %.0f ms (%q); want member-1, stopped 6 s, silent", rb.Generation, rb.SlowestClient, rb.SlowestMs, rb.SlowestWhy)
		}
		return
	}
	t.Errorf("no rebalance of %s started by member-2 leaving", group)
}

// rdkafkaReader is a librdkafka consumer (python/confluent-kafka) run by
// rdkafkaScript.
type rdkafkaReader struct {
	cmd *exec.Cmd
	out strings.Builder
}

// rdkafkaResult is what the script printed: per consumed offset its
// timestamp and when it was consumed, and the fetch positions its
// statistics showed.
type rdkafkaResult struct {
	Consumed int `json:"consumed"`
	// Final is the client's last statistics of the partition: the offset
	// it fetches next, what it handed the application, what it holds
	// fetched and not handed over.
	Final struct {
		NextOffset int64 `json:"next_offset"`
		AppOffset  int64 `json:"app_offset"`
		FetchqCnt  int64 `json:"fetchq_cnt"`
	} `json:"final"`
	// Positions are the distinct next_offset values its statistics
	// showed, in order: the last two bound its last fetch.
	Positions []int64 `json:"positions"`
	// Ages maps an offset to its age in ms when the application got it.
	Ages map[string]float64 `json:"ages"`
	Err  string             `json:"error,omitempty"`
}

func (r *rdkafkaResult) summary() string {
	return "consumed " + strconv.Itoa(r.Consumed) + ", final " + strconv.FormatInt(r.Final.NextOffset, 10) + "/" +
		strconv.FormatInt(r.Final.AppOffset, 10) + "/" + strconv.FormatInt(r.Final.FetchqCnt, 10) + " " + r.Err
}

// rdkafkaScript consumes job.topic in job.group at job.rate records a
// second for job.seconds, with fetches of 4 KB and a prefetch of one
// fetch (queued.min.messages=1: librdkafka fetches a partition again only
// once its queue is empty), auto-committing what it consumed. It stops
// at a moment its statistics show a fetched batch still queued (so no
// fetch is in flight and none will start), and prints that statistics'
// fetch position, and the age of each record when it got it.
const rdkafkaScript = `
import json, sys, time
from confluent_kafka import Consumer
job = json.loads(sys.argv[1])
last = {}
positions = []
def on_stats(s):
    p = json.loads(s).get("topics", {}).get(job["topic"], {}).get("partitions", {}).get("0")
    if not p or p.get("next_offset", -1) < 0:
        return
    last.clear()
    last.update(next_offset=p["next_offset"], app_offset=p["app_offset"], fetchq_cnt=p["fetchq_cnt"])
    if not positions or positions[-1] != p["next_offset"]:
        positions.append(p["next_offset"])
c = Consumer({"bootstrap.servers": job["bootstrap"], "client.id": job["client_id"], "group.id": job["group"],
    "group.protocol": "classic", "auto.offset.reset": "earliest", "enable.auto.commit": True,
    "auto.commit.interval.ms": 1000, "session.timeout.ms": 10000, "queued.min.messages": 1,
    "fetch.message.max.bytes": 4096, "fetch.max.bytes": 4096, "message.max.bytes": 4096,
    "statistics.interval.ms": 100, "stats_cb": on_stats})
c.subscribe([job["topic"]])
ages, consumed, err = {}, 0, None
deadline = time.monotonic() + job["seconds"]
try:
    while True:
        if time.monotonic() > deadline and last.get("fetchq_cnt", 0) >= 2:
            break
        if time.monotonic() > deadline + 5:
            err = "no quiet moment to stop at"
            break
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            err = err or str(m.error())
            continue
        ages[str(m.offset())] = time.time() * 1000 - m.timestamp()[1]
        consumed += 1
        time.sleep(1.0 / job["rate"])
    final = dict(last)
finally:
    c.close()
print("rdkafka-result " + json.dumps({"consumed": consumed, "final": final, "positions": positions, "ages": ages, "error": err}), flush=True)
`

func startRdkafkaReader(ctx context.Context, t *testing.T, python, addr, topic, group, clientID string, rate int, d time.Duration) *rdkafkaReader {
	t.Helper()
	job, _ := json.Marshal(map[string]any{"bootstrap": addr, "topic": topic, "group": group, "client_id": clientID, "rate": rate,
		"seconds": d.Seconds()})
	r := &rdkafkaReader{cmd: exec.CommandContext(ctx, python, "-c", rdkafkaScript, string(job))}
	r.cmd.WaitDelay = 10 * time.Second
	r.cmd.Stdout, r.cmd.Stderr = &r.out, &r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return r
}

func (r *rdkafkaReader) wait(t *testing.T) *rdkafkaResult {
	t.Helper()
	err := r.cmd.Wait()
	var res rdkafkaResult
	for _, line := range strings.Split(r.out.String(), "\n") {
		if v, ok := strings.CutPrefix(line, "rdkafka-result "); ok {
			if jerr := json.Unmarshal([]byte(v), &res); jerr != nil {
				t.Fatalf("librdkafka reader: %v: %s", jerr, v)
			}
			return &res
		}
	}
	t.Fatalf("librdkafka reader: %v, no result:\n%s", err, r.out.String())
	return nil
}

// checkRdkafkaLag: kscope's fetch position lag of the librdkafka reader
// is within 1% of the log end offset kafka-consumer-groups gives less the
// fetch position the client's own statistics gave; its committed offset
// is kafka-consumer-groups' CURRENT-OFFSET; its lag in time is within 1 s
// of the age the client saw at the first record of its last fetch.
func checkRdkafkaLag(_ context.Context, t *testing.T, rep *consumers.Report, res *rdkafkaResult, truth map[int32][2]int64) {
	t.Helper()
	if res.Err != "" {
		t.Errorf("librdkafka reader: %s", res.Err)
	}
	c := consumerNamed(rep, "rdkafka-group", "")
	if c == nil || len(c.Partitions) != 1 {
		t.Fatalf("no row of rdkafka-group: %+v", rep.Consumers)
	}
	p, want := c.Partitions[0], truth[0]
	logEnd := want[0] + want[1] // CURRENT-OFFSET + LAG
	if p.Committed != want[0] {
		t.Errorf("committed %d, kafka-consumer-groups' CURRENT-OFFSET %d", p.Committed, want[0])
	}
	wantLag := logEnd - res.Final.NextOffset
	t.Logf("kscope: position %d, lag %d messages, %.0f ms; kafka-consumer-groups: log end %d, committed %d; librdkafka: next offset %d, app offset %d, queued %d: lag %d",
		p.Position, p.LagMessages, p.LagMs, logEnd, want[0], res.Final.NextOffset, res.Final.AppOffset, res.Final.FetchqCnt, wantLag)
	if wantLag < 1000 || math.Abs(float64(p.LagMessages-wantLag)) > 0.01*float64(wantLag) {
		t.Errorf("lag %d messages, the truth %d: more than 1%% apart (or no lag to see)", p.LagMessages, wantLag)
	}
	if n := len(res.Positions); n >= 2 {
		first := res.Positions[n-2] // the position before its last fetch: that fetch's first record
		age, ok := res.Ages[strconv.FormatInt(first, 10)]
		if !ok || age < 5000 || math.Abs(p.LagMs-age) > 1000 {
			t.Errorf("lag %.0f ms; the client got offset %d %.0f ms after its timestamp (found: %v)", p.LagMs, first, age, ok)
		}
	} else {
		t.Errorf("the client's statistics showed %d fetch positions", n)
	}
}
