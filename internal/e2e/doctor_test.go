package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/doctor"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/findings"
)

// doctorOutput is `kscope doctor --format json`.
type doctorOutput struct {
	Findings []findings.Finding `json:"findings"`
	Latency  findings.Latency   `json:"latency"`
	Report   string             `json:"report"`
}

// TestDoctor is kscope doctor on a real broker (ext4 on a loop device)
// under the explain scenarios' produce load, in three runs: a healthy
// control, the file system frozen twice (300 and 500 ms), and CPU hogs
// above the broker's priority. doctor must exit 0 with no alarm in the
// control, and 1 with the injected fault ranked among its alarms in the
// others, with the causes explain gives on the same recording.
func TestDoctor(t *testing.T) {
	b, mnt, dev, _ := explainBroker(t)
	hog := hogBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const topic = "doctor"

	// run runs doctor for 12 s (8 s recorded, 4 s kept for a profile)
	// while the load runs and inject injects, 2 s into the recording.
	run := func(t *testing.T, inject func(ctx context.Context)) (doctorOutput, int, string) {
		t.Helper()
		out := filepath.Join(t.TempDir(), "doctor")
		// A third of the explain scenarios' load (300 records/s): with
		// theirs, the producers, the recorder and the broker keep two
		// CPUs' run queue over two, which USE rightly calls saturated.
		load := startLoad(ctx, t, b.Addr(), topic, 2, 3)
		defer load.cancel()
		port := b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:]
		cmd := startCLI(ctx, t, "doctor: record: broker pid", "doctor", "--port", port, "--iface", "lo",
			"--duration", "12s", "--profile", "4s", "--out", out, "--format", "json")
		close(load.start)
		time.Sleep(2 * time.Second)
		inject(load.ctx)
		var err error
		select {
		case err = <-cmd.exited:
		case <-time.After(90 * time.Second):
			cmd.cmd.Process.Kill()
			t.Fatalf("doctor did not end in 90 s: %s", cmd.errOut())
		}
		load.stop(t)
		t.Cleanup(func() { keepDirOnFailure(t, out) })
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var res doctorOutput
		if jerr := json.Unmarshal(cmd.stdout.Bytes(), &res); jerr != nil {
			t.Fatalf("doctor's output (exit %d): %v: %s\nstderr: %s", code, jerr, cmd.stdout.String(), cmd.errOut())
		}
		t.Logf("doctor: exit %d; stderr:\n%s", code, cmd.errOut())
		for i, f := range res.Findings {
			t.Logf("%d. %s", i+1, f)
		}
		if res.Report != filepath.Join(out, doctor.ReportFile) {
			t.Errorf("report %q, want it in %s", res.Report, out)
		}
		checkReportPage(t, res)
		return res, code, filepath.Join(out, doctor.RecordingDir)
	}

	// A broker just started compiles its hot code for its first seconds
	// under load (the JIT took half its CPU in a first try): a healthy
	// broker in production is past that. The load runs 15 s first.
	warm := startLoad(ctx, t, b.Addr(), topic, 2, 3)
	close(warm.start)
	time.Sleep(15 * time.Second)
	warm.stop(t)

	t.Run("control", func(t *testing.T) {
		res, code, _ := run(t, func(context.Context) {})
		if code != 0 {
			t.Errorf("doctor exited %d on a healthy broker, want 0", code)
		}
		for _, f := range res.Findings {
			if f.Severity >= findings.Alarm {
				t.Errorf("alarm on a healthy broker: %s", f)
			}
		}
		if res.Latency.Requests < 1000 {
			t.Errorf("doctor timed %d produce requests, want the load's (over 1000)", res.Latency.Requests)
		}
	})

	t.Run("frozen-fs", func(t *testing.T) {
		res, code, rec := run(t, func(context.Context) {
			for _, d := range []time.Duration{300 * time.Millisecond, 500 * time.Millisecond} {
				iotRun(t, "fsfreeze", "-f", mnt)
				time.Sleep(d)
				iotRun(t, "fsfreeze", "-u", mnt)
				time.Sleep(time.Second)
			}
		})
		if code != 1 {
			t.Errorf("doctor exited %d with the file system frozen, want 1", code)
		}
		stall := firstAlarm(res.Findings, "stalls")
		if stall == nil || !strings.Contains(stall.Title, "device "+dev) {
			t.Errorf("no alarm of a stall on %s: %v", dev, stall)
		}
		sameCausesAsExplain(t, res, rec, explain.CauseSlowWrite, explain.CauseLockWait)
	})

	t.Run("cpu-hog", func(t *testing.T) {
		res, code, rec := run(t, func(ctx context.Context) {
			// Two busy loops per CPU at nice -19, for 3 s: a batch job
			// well above the broker's priority (at nice -10 the slowest
			// requests took 70 ms on an idle machine: not slow enough
			// for an alarm).
			var cmds []*exec.Cmd
			for cpu := range 2 {
				for range 2 {
					c := exec.CommandContext(ctx, "nice", "-n", "-19", "taskset", "-c", strconv.Itoa(cpu), hog, "-c", "while :; do :; done")
					if err := c.Start(); err != nil {
						t.Fatalf("CPU hog: %v", err)
					}
					cmds = append(cmds, c)
				}
			}
			time.Sleep(3 * time.Second)
			for _, c := range cmds {
				c.Process.Kill()
				c.Wait()
			}
		})
		if code != 1 {
			t.Errorf("doctor exited %d under the CPU hogs, want 1", code)
		}
		starved := firstAlarm(res.Findings, "slow-requests")
		if starved == nil || !strings.HasPrefix(starved.Title, explain.CauseCPUStarved+":") {
			t.Errorf("the first slow-request alarm is not cpu-starved: %v", starved)
		} else if !strings.Contains(starved.Evidence, hogComm) {
			t.Errorf("the cpu-starved alarm's evidence does not name the hogs (%s): %s", hogComm, starved.Evidence)
		}
		if firstOf(res.Findings, "profile") == nil {
			t.Errorf("the CPU was the problem, but no profile was taken")
		}
		sameCausesAsExplain(t, res, rec, explain.CauseCPUStarved)
	})
}

func firstAlarm(fs []findings.Finding, check string) *findings.Finding {
	for i := range fs {
		if fs[i].Check == check && fs[i].Severity >= findings.Alarm {
			return &fs[i]
		}
	}
	return nil
}

func firstOf(fs []findings.Finding, check string) *findings.Finding {
	for i := range fs {
		if fs[i].Check == check {
			return &fs[i]
		}
	}
	return nil
}

// sameCausesAsExplain checks that doctor's slow-request findings are
// explain's causes on the same recording at the same threshold, request
// for request, and that one of want is among its alarms.
func sameCausesAsExplain(t *testing.T, res doctorOutput, rec string, want ...string) {
	t.Helper()
	_, sum := runExplain(t, rec, "--slow", "100ms")
	got := map[string]string{}
	for _, f := range res.Findings {
		if f.Check == "slow-requests" {
			cause, _, _ := strings.Cut(f.Title, ":")
			got[cause] = f.Title
		}
	}
	alarmed := false
	for _, c := range sum.Causes {
		if c.Requests == 0 {
			continue
		}
		title, ok := got[c.Cause]
		if !ok || !strings.HasPrefix(title, c.Cause+": "+strconv.FormatInt(c.Requests, 10)+" of the "+strconv.FormatInt(sum.Slow, 10)+" ") {
			t.Errorf("explain --slow 100ms: %s %d of %d; doctor: %q", c.Cause, c.Requests, sum.Slow, title)
		}
		delete(got, c.Cause)
		for _, w := range want {
			if f := firstAlarm(res.Findings, "slow-requests"); f != nil && c.Cause == w && strings.HasPrefix(f.Title, w+":") {
				alarmed = true
			}
		}
	}
	for cause := range got {
		t.Errorf("doctor names %s, explain does not", cause)
	}
	if !alarmed {
		t.Errorf("none of %v is doctor's first slow-request alarm (explain: %s)", want, causeCounts(sum))
	}
}

// checkReportPage checks that the report doctor wrote lists its findings.
func checkReportPage(t *testing.T, res doctorOutput) {
	t.Helper()
	page, err := os.ReadFile(res.Report)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(page), `id="findings"`) {
		t.Errorf("%s has no findings section", res.Report)
	}
}
