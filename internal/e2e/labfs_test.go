package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
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

	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/lab/fsbench"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// TestLabFS runs `kscope lab fs` as a process, with real brokers on real
// file systems on loop devices:
//
//   - interrupt: SIGINT while a file system is frozen by --stall, with the
//     broker running: the command exits soon and leaves no mount under its
//     work dir, no loop device backed by its images, no broker process;
//   - kill: SIGKILL in the same state leaves all of those (the frozen file
//     system holds the broker), and the next run in the work dir removes
//     them before it starts;
//   - run: that next run, ext4 and xfs, one trial of a 5 s load with the
//     fsync-writer noise: both variants with plausible figures, traced
//     writes and journal commits, verdicts and an HTML report;
//   - cleanup: `kscope lab fs --cleanup` removes what another SIGKILLed run
//     left.
func TestLabFS(t *testing.T) {
	iotRequire(t)
	for _, tool := range []string{"mkfs.xfs", "dumpe2fs"} {
		if labtest.Tool(tool) == "" {
			labtest.Unavailable(t, "lab fs e2e: %s not found", tool)
		}
	}
	libs := labtest.RequireKafka(t)
	work := filepath.Join(t.TempDir(), "work")
	wl := filepath.Join(t.TempDir(), "workload.json")
	if err := os.WriteFile(wl, []byte(`{"rate": 500, "producers": 1, "partitions": 2, "duration": "5s", "warmup": "2s"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(extra ...string) []string {
		return append([]string{"lab", "fs", "--work-dir", work, "--libs", libs, "--image-size", "1GiB", "--workload", wl, "--trials", "1"}, extra...)
	}
	t.Cleanup(func() {
		// Whatever happened, leave nothing behind on the machine.
		if left, err := fsbench.Cleanup(work); err != nil || !left.Empty() {
			t.Logf("final cleanup of %s: %v (%v)", work, left, err)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		c := startLabFS(t, args("--variants", "ext4,xfs", "--stall", "fsfreeze:400ms@every1s", "--noise", "fsync-writer")...)
		pid := c.waitBroker(t)
		c.waitFrozen(t, work)
		start := time.Now()
		if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
			t.Fatal(err)
		}
		err := c.wait(t, 90*time.Second)
		t.Logf("exited %v after SIGINT: %v", time.Since(start).Round(time.Millisecond), err)
		if err == nil {
			t.Errorf("exit status 0 after an interrupt")
		}
		if !strings.Contains(c.errOut(), "interrupted") {
			t.Errorf("no word of the interrupt:\n%s", c.errOut())
		}
		if d := time.Since(start); d > 45*time.Second {
			t.Errorf("took %v to exit after SIGINT", d)
		}
		assertNothingLeft(t, work, pid)
	})

	t.Run("kill", func(t *testing.T) {
		c := startLabFS(t, args("--variants", "xfs", "--stall", "fsfreeze:400ms@every1s")...)
		pid := c.waitBroker(t)
		c.waitFrozen(t, work)
		if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		c.wait(t, 10*time.Second)
		// Left behind: the mount, the loop device, and (held by the
		// frozen file system) possibly the broker.
		if m := labfsMounts(t, work); len(m) == 0 {
			t.Errorf("SIGKILL left no mount: the test tests nothing")
		}
		if l := labfsLoops(t, work); len(l) == 0 {
			t.Errorf("SIGKILL left no loop device: the test tests nothing")
		}
		t.Logf("after SIGKILL: mounts %v, loop devices %v, broker %d alive: %v", labfsMounts(t, work), labfsLoops(t, work), pid, lab.BrokerAlive(pid))

		t.Run("next run cleans up and runs", func(t *testing.T) {
			html := filepath.Join(t.TempDir(), "report.html")
			c := startLabFS(t, args("--variants", "ext4,xfs", "--noise", "fsync-writer", "--format", "json", "-o", html)...)
			if err := c.wait(t, 150*time.Second); err != nil {
				t.Fatalf("lab fs: %v\n%s", err, c.errOut())
			}
			removed := regexp.MustCompile(`removed what an earlier run \(pid \d+\) left in .*mount.*`).FindString(c.errOut())
			if removed == "" {
				t.Errorf("the next run did not report removing the leftovers:\n%s", c.errOut())
			}
			t.Logf("next run: %s", removed)
			assertNothingLeft(t, work, pid)
			var res fsbench.Result
			if err := json.Unmarshal(c.stdout.Bytes(), &res); err != nil {
				t.Fatalf("JSON output: %v\n%s", err, c.stdout.String())
			}
			var table bytes.Buffer
			fsbench.WriteTable(&table, &res)
			t.Logf("lab fs output:\n%s", table.String())
			checkLabFSResult(t, &res)
			page, err := os.ReadFile(html)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"<svg", `id="verdicts"`, ">xfs<", "Content-Security-Policy"} {
				if !bytes.Contains(page, []byte(want)) {
					t.Errorf("report.html lacks %q", want)
				}
			}
		})
	})

	t.Run("cleanup", func(t *testing.T) {
		c := startLabFS(t, args("--variants", "ext4")...)
		pid := c.waitBroker(t)
		c.cmd.Process.Signal(syscall.SIGKILL)
		c.wait(t, 10*time.Second)
		if len(labfsMounts(t, work)) == 0 || len(labfsLoops(t, work)) == 0 {
			t.Errorf("SIGKILL left no mount or no loop device: the test tests nothing")
		}
		var out, errb bytes.Buffer
		if code := cli.Main([]string{"lab", "fs", "--cleanup", "--work-dir", work}, &out, &errb); code != 0 {
			t.Fatalf("lab fs --cleanup: exit %d: %s%s", code, out.String(), errb.String())
		}
		t.Logf("lab fs --cleanup: %s", strings.TrimSpace(out.String()))
		if !strings.Contains(out.String(), "mount(s) removed") || !strings.Contains(out.String(), "loop device(s) detached") {
			t.Errorf("--cleanup did not say what it removed: %s", out.String())
		}
		assertNothingLeft(t, work, pid)
	})
}

// checkLabFSResult checks the figures of the short real run.
func checkLabFSResult(t *testing.T, res *fsbench.Result) {
	t.Helper()
	if len(res.Runs) != 2 || len(res.Summary) != 2 || len(res.Verdicts) != 1 {
		t.Fatalf("%d runs, %d summaries, %d verdicts; want 2, 2, 1", len(res.Runs), len(res.Summary), len(res.Verdicts))
	}
	wantKind := map[string]string{"ext4": event.KindJBD2Commit, "xfs": event.KindXlogWrite}
	for i, r := range res.Runs {
		name := []string{"ext4", "xfs"}[i]
		if r.Variant != name {
			t.Errorf("run %d is %s, want %s", i, r.Variant, name)
		}
		if r.Acked < 2000 || r.MsgsPerSec < 400 || r.MsgsPerSec > 600 {
			t.Errorf("%s: %d acked, %.0f msg/s at 500 offered", name, r.Acked, r.MsgsPerSec)
		}
		if !(r.P50Ms > 0 && r.P50Ms <= r.P99Ms && r.P99Ms <= r.P999Ms && r.P999Ms <= r.MaxMs && r.MaxMs < 30000) {
			t.Errorf("%s: implausible produce latency p50 %v p99 %v p99.9 %v max %v", name, r.P50Ms, r.P99Ms, r.P999Ms, r.MaxMs)
		}
		if r.OverSLOPct < 0 || r.OverSLOPct > 100 || (r.MaxMs <= res.SLOMs && r.OverSLO != 0) {
			t.Errorf("%s: over SLO %v%% (%d) with max %v", name, r.OverSLOPct, r.OverSLO, r.MaxMs)
		}
		if r.Writes == 0 || !(r.WriteP99Ms > 0) {
			t.Errorf("%s: %d traced writes, p99 %v", name, r.Writes, r.WriteP99Ms)
		}
		if r.Journal == 0 || r.JournalKind != wantKind[name] || !(r.JournalP99Ms > 0) {
			t.Errorf("%s: %d journal commits of kind %q, p99 %v", name, r.Journal, r.JournalKind, r.JournalP99Ms)
		}
		if r.NoiseFsyncs == 0 {
			t.Errorf("%s: the noise made no fsyncs", name)
		}
		if len(r.Seconds) != 5 {
			t.Errorf("%s: %d per-second samples, want 5", name, len(r.Seconds))
		}
		if name == "ext4" && !strings.Contains(r.Features, "has_journal") {
			t.Errorf("ext4 features %q", r.Features)
		}
	}
	// Produce latency rows come from internal/bench/compare over the
	// load results (5-second runs: per-second stand-ins, and the share
	// over the SLO untested when neither variant had a request above it);
	// the others are Mann–Whitney tests here.
	latency := map[string]bool{}
	for _, m := range fsbench.Metrics {
		latency[m.Key] = m.Latency != ""
	}
	for _, row := range res.Verdicts[0].Rows {
		if row.Verdict == "" || row.Sample == "" || (!latency[row.Metric] && row.Test.NA == 0) {
			t.Errorf("verdict row %+v", row)
		}
	}
	if res.Verdicts[0].Latency == nil || len(res.Summary[0].Above) == 0 {
		t.Errorf("no produce latency comparison (%v) or shares above thresholds (%v)", res.Verdicts[0].Latency, res.Summary[0].Above)
	}
	for _, r := range res.Runs {
		if r.Load == nil {
			t.Errorf("%s: no load result kept", r.Variant)
		}
	}
}

// assertNothingLeft checks that no mount, loop device or broker of work
// remains.
func assertNothingLeft(t *testing.T, work string, brokerPID int) {
	t.Helper()
	if m := labfsMounts(t, work); len(m) > 0 {
		t.Errorf("mounts left under %s: %v", work, m)
	}
	if l := labfsLoops(t, work); len(l) > 0 {
		t.Errorf("loop devices left backed by %s: %v", work, l)
	}
	deadline := time.Now().Add(10 * time.Second)
	for lab.BrokerAlive(brokerPID) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if lab.BrokerAlive(brokerPID) {
		t.Errorf("broker pid %d still running", brokerPID)
	}
	if imgs, _ := filepath.Glob(filepath.Join(work, "run", "*.img")); len(imgs) > 0 {
		t.Errorf("images left: %v", imgs)
	}
}

// labfsMounts lists the mount points under dir (/proc/self/mountinfo).
func labfsMounts(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// labfsLoops lists the loop devices backed by files under dir (losetup -J).
func labfsLoops(t *testing.T, dir string) []string {
	t.Helper()
	out, err := exec.Command(labtest.Tool("losetup"), "-J", "-l").Output()
	if err != nil {
		t.Fatalf("losetup -J: %v", err)
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil // no loop devices at all
	}
	var l struct {
		Devices []struct {
			Name     string `json:"name"`
			BackFile string `json:"back-file"`
		} `json:"loopdevices"`
	}
	if err := json.Unmarshal(out, &l); err != nil {
		t.Fatalf("losetup -J: %v: %s", err, out)
	}
	var devs []string
	for _, d := range l.Devices {
		if strings.HasPrefix(d.BackFile, dir+"/") {
			devs = append(devs, d.Name)
		}
	}
	return devs
}

// labfsCLI is a running `kscope lab fs`.
type labfsCLI struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr strings.Builder
	lines  chan string
	exited chan error
	err    error
	done   bool
}

func startLabFS(t *testing.T, args ...string) *labfsCLI {
	t.Helper()
	c := &labfsCLI{lines: make(chan string, 1000), exited: make(chan error, 1)}
	c.cmd = helperCommand(context.Background(), args...)
	c.cmd.Stdout = &c.stdout
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.mu.Lock()
			c.stderr.WriteString(sc.Text() + "\n")
			c.mu.Unlock()
			select {
			case c.lines <- sc.Text():
			default:
			}
		}
		close(c.lines)
		c.exited <- c.cmd.Wait()
	}()
	t.Cleanup(func() {
		if !c.done {
			c.cmd.Process.Kill()
			c.wait(t, 30*time.Second)
		}
	})
	return c
}

func (c *labfsCLI) errOut() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stderr.String()
}

var brokerLine = regexp.MustCompile(`^lab fs: \S+ trial \d+: broker pid (\d+) on `)

// waitBroker waits for the line saying the first broker runs, and returns
// its pid.
func (c *labfsCLI) waitBroker(t *testing.T) int {
	t.Helper()
	timeout := time.After(120 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("kscope lab fs ended before a broker ran:\n%s", c.errOut())
			}
			if m := brokerLine.FindStringSubmatch(line); m != nil {
				pid, _ := strconv.Atoi(m[1])
				if !lab.BrokerAlive(pid) {
					t.Fatalf("broker pid %d of %q is not running", pid, line)
				}
				return pid
			}
		case <-timeout:
			t.Fatalf("no broker after 120 s:\n%s", c.errOut())
		}
	}
}

// waitFrozen waits until the state file of work lists a frozen file
// system (fsfreeze -f runs right after it is listed).
func (c *labfsCLI) waitFrozen(t *testing.T, work string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(work, "state.json"))
		if bytes.Contains(b, []byte(`"kind": "frozen"`)) {
			time.Sleep(100 * time.Millisecond) // fsfreeze -f done
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no frozen file system listed in 60 s:\n%s", c.errOut())
}

// wait waits for the process to exit, killing it after d.
func (c *labfsCLI) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	if c.done {
		return c.err
	}
	select {
	case err := <-c.exited:
		c.err, c.done = err, true
	case <-time.After(d):
		c.cmd.Process.Kill()
		c.err, c.done = <-c.exited, true
		t.Errorf("kscope lab fs did not exit within %v (killed):\n%s", d, c.errOut())
		if c.err == nil {
			c.err = errors.New("killed")
		}
	}
	return c.err
}
