package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/lab/fsbench"
	"github.com/kscope-dev/kscope/internal/slowdisk"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// The short version of issue 37's experiment that CI runs: ext4 against
// XFS on an emulated slow device, with a neighbour's fsyncs.
const (
	// slowSLO is the seed's SLO (65 ms), lab fs's default.
	slowSLO = 65 * time.Millisecond
	// slowTrials per variant: with one trial of 8 s the p99 bootstrap
	// (over that trial's seconds) did not call ext4's 359 ms against
	// XFS's 44 ms on hdd-busy (adjusted p 0.068); with two it did
	// (p 2e-6), and two let the control have the same power.
	slowTrials = "2"
	// slowWorkload is the short load of every run here: 8 s measured
	// after 3 s of warm-up, 500 msg/s from one producer on 2
	// partitions (docs/labfs.md, "The short experiment in CI").
	slowWorkload = `{"rate": 500, "producers": 1, "partitions": 2, "duration": "8s", "warmup": "3s"}`
	// Ports of lab fs's brokers (--port), one per subtest: the
	// range set aside for this test is 19700-19719.
	slowPortExperiment = 19701
	slowPortControl    = 19702
	slowPortInterrupt  = 19703
)

// TestLabFSSlowDevice runs `kscope lab fs --device` as a process, with
// real brokers on ext4 and XFS on emulated slow devices (FUSE + loop,
// internal/slowdisk):
//
//   - hdd-busy: the seed's experiment, short (ext4 against XFS, the
//     fsync-writer noise, two trials of 8 s, recorded): every run on
//     the emulated device and the device served its requests; ext4's
//     journal commits at the profile's scale; a decisive verdict on the
//     share over the SLO or p99 (whichever direction: the test checks
//     that the lab can see an effect, not that it agrees with the
//     seed); `kscope explain` on ext4's recordings names the journal as
//     the root of slow appends or of the lock waits behind them;
//   - fast: the control, the same on the fast profile without
//     recordings: no verdict on the share over the SLO (a case where
//     the answer is no: on a fast device nothing the seed measured
//     crosses 65 ms). The p99 verdict is logged, not judged: ext4 and
//     XFS are two file systems, and on a fast device under fsync noise
//     ext4's tail is a few ms longer (a CI run: p99 16.0 against 11.4
//     and 13.9 ms in clean trials), which two trials may or may not
//     call a change; that is not the effect this control is about;
//   - interrupt: SIGINT while a broker runs on an emulated device: the
//     command exits soon and leaves no mount (the file system nor the
//     emulator's FUSE mount), no loop device and no broker.
//
// Hostile profile files at the command line are TestLabFSDeviceRefused
// (internal/cli).
func TestLabFSSlowDevice(t *testing.T) {
	iotRequire(t)
	for _, tool := range []string{"mkfs.xfs", "dumpe2fs"} {
		if labtest.Tool(tool) == "" {
			labtest.Unavailable(t, "lab fs --device e2e: %s not found", tool)
		}
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		labtest.Unavailable(t, "lab fs --device e2e: %v", err)
	}
	libs := labtest.RequireKafka(t)
	work := filepath.Join(t.TempDir(), "work")
	wl := filepath.Join(t.TempDir(), "workload.json")
	if err := os.WriteFile(wl, []byte(slowWorkload), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(device string, port int, extra ...string) []string {
		return append([]string{"lab", "fs", "--work-dir", work, "--libs", libs, "--image-size", "1GiB", "--workload", wl,
			"--trials", slowTrials, "--device", device, "--device-seed", "1", "--port", strconv.Itoa(port),
			"--slo", slowSLO.String()}, extra...)
	}
	t.Cleanup(func() {
		if left, err := fsbench.Cleanup(work); err != nil || !left.Empty() {
			t.Logf("final cleanup of %s: %v (%v)", work, left, err)
		}
	})

	t.Run("hdd-busy", func(t *testing.T) {
		rec := filepath.Join(t.TempDir(), "rec")
		res := runLabFSJSON(t, args("hdd-busy", slowPortExperiment, "--variants", "ext4,xfs", "--noise", "fsync-writer", "--record", rec, "--record-trials", "all")...)
		checkOnEmulatedDevice(t, res, "hdd-busy")
		checkJournalAtProfileScale(t, res)
		decisive := tailVerdicts(t, res)
		if !isDecisive(decisive[""]) {
			t.Errorf("hdd-busy: no decisive verdict on p99 or the share over %v: %v", slowSLO, decisive)
		}
		checkExplainJournal(t, res, filepath.Join(rec, "ext4-1"), filepath.Join(rec, "ext4-2"))
		logExplain(t, filepath.Join(rec, "xfs-1"))
		logExplain(t, filepath.Join(rec, "xfs-2"))
	})

	t.Run("fast", func(t *testing.T) {
		res := runLabFSJSON(t, args("fast", slowPortControl, "--variants", "ext4,xfs", "--noise", "fsync-writer")...)
		checkOnEmulatedDevice(t, res, "fast")
		// A share the compare does not test (at or below the baseline's
		// p99) is no verdict either way.
		if verdict := tailVerdicts(t, res)["over_slo_pct"]; verdict != fsbench.NoChange && verdict != fsbench.NotTested {
			t.Errorf("fast (the control): over_slo_pct %q, want %q", verdict, fsbench.NoChange)
		}
	})

	t.Run("interrupt", func(t *testing.T) {
		c := startLabFS(t, args("hdd-busy", slowPortInterrupt, "--variants", "ext4", "--noise", "fsync-writer")...)
		pid := c.waitBroker(t)
		if fuse := slowdiskMounts(t, work); len(fuse) == 0 {
			t.Errorf("no emulator mount under %s while the broker runs: the test tests nothing", work)
		}
		time.Sleep(2 * time.Second) // the broker's and the noise's writes in flight on the device
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
		if fuse := slowdiskMounts(t, work); len(fuse) > 0 {
			t.Errorf("emulator mounts left: %v", fuse)
		}
		assertNothingLeft(t, work, pid)
	})
}

// runLabFSJSON runs `kscope lab fs ARGS --format json` to its end and
// returns its result, logging its table.
func runLabFSJSON(t *testing.T, args ...string) *fsbench.Result {
	t.Helper()
	start := time.Now()
	c := startLabFS(t, append(args, "--format", "json")...)
	if err := c.wait(t, 5*time.Minute); err != nil {
		t.Fatalf("lab fs: %v\n%s", err, c.errOut())
	}
	t.Logf("lab fs ran %v:\n%s", time.Since(start).Round(time.Second), c.errOut())
	var res fsbench.Result
	if err := json.Unmarshal(c.stdout.Bytes(), &res); err != nil {
		t.Fatalf("JSON output: %v\n%s", err, c.stdout.String())
	}
	var table strings.Builder
	fsbench.WriteTable(&table, &res)
	t.Logf("lab fs output:\n%s", table.String())
	if len(res.Runs) != 4 || len(res.Verdicts) != 1 {
		t.Fatalf("%d runs, %d verdicts; want 4 and 1", len(res.Runs), len(res.Verdicts))
	}
	return &res
}

// checkOnEmulatedDevice checks that the result names the profile and
// that every run's loop device was the emulator's, which served reads,
// writes and flushes, holding them.
func checkOnEmulatedDevice(t *testing.T, res *fsbench.Result, profile string) {
	t.Helper()
	if res.Device == nil || res.Device.Name != profile {
		t.Errorf("result's device %+v, want profile %s", res.Device, profile)
	}
	for _, r := range res.Runs {
		e := r.Emulated
		if e == nil {
			t.Errorf("%s-%d: not on an emulated device (%s)", r.Variant, r.Trial, r.Device)
			continue
		}
		t.Logf("%s-%d: %s on %s served %d reads, %d writes, %d flushes (mean held %.2f, %.2f, %.2f ms), %d unheld",
			r.Variant, r.Trial, r.Device, e.File, e.Reads, e.Writes, e.Flushes, e.MeanReadHeldMs, e.MeanWriteHeldMs, e.MeanFlushHeldMs, e.Unheld)
		if e.Profile != profile || !strings.HasSuffix(e.File, "/"+slowdisk.DeviceFile) || !strings.HasPrefix(r.Device, "/dev/loop") {
			t.Errorf("%s-%d: device %s, emulated %+v", r.Variant, r.Trial, r.Device, e)
		}
		if e.Writes == 0 || e.Flushes == 0 || !(e.MeanWriteHeldMs > 0) || !(e.MeanFlushHeldMs > 0) {
			t.Errorf("%s-%d: the emulated device served %d writes, %d flushes (held %v, %v ms)", r.Variant, r.Trial, e.Writes, e.Flushes, e.MeanWriteHeldMs, e.MeanFlushHeldMs)
		}
		if r.Acked == 0 || r.Journal == 0 || r.NoiseFsyncs == 0 {
			t.Errorf("%s-%d: %d acked, %d journal commits, %d noise fsyncs", r.Variant, r.Trial, r.Acked, r.Journal, r.NoiseFsyncs)
		}
	}
}

// checkJournalAtProfileScale: on hdd-busy (flush p50 15 ms, p99
// 100 ms) a jbd2 commit, which waits for a preflush and a FUA write,
// takes tens of milliseconds at p99; on the host's own disk it took
// 2.6 ms (bench/labfs-results.md).
func checkJournalAtProfileScale(t *testing.T, res *fsbench.Result) {
	t.Helper()
	const minP99Ms = 20
	for _, r := range res.Runs {
		if r.Variant == "ext4" && !(r.JournalP99Ms >= minP99Ms) {
			t.Errorf("ext4-%d: jbd2 commit p99 %.2f ms, below the profile's scale (%d ms)", r.Trial, r.JournalP99Ms, minP99Ms)
		}
	}
}

// tailVerdicts returns the verdicts of p99 and of the share over the SLO
// of the one comparison, by metric key, and under "" the decisive one of
// them ("" when neither is).
func tailVerdicts(t *testing.T, res *fsbench.Result) map[string]string {
	t.Helper()
	out := map[string]string{"": ""}
	for _, row := range res.Verdicts[0].Rows {
		if row.Metric != "produce_p99_ms" && row.Metric != "over_slo_pct" {
			continue
		}
		out[row.Metric] = row.Verdict
		t.Logf("%s against %s: %s %v -> %v: %s (p adjusted %.3g; %s)", res.Verdicts[0].Variant, res.Verdicts[0].Baseline,
			row.Metric, row.A, row.B, row.Verdict, row.PAdjusted, row.Reason)
		if isDecisive(row.Verdict) {
			out[""] = row.Verdict
		}
	}
	if len(out) != 3 {
		t.Errorf("verdicts lack p99 or over SLO: %v", out)
	}
	return out
}

func isDecisive(verdict string) bool { return verdict == fsbench.Better || verdict == fsbench.Worse }

// checkExplainJournal runs `kscope explain DIR --format json` as a
// process on ext4's recordings, with explain's own threshold (the
// recording's p99), as an operator would: the slow appends waited for
// journal commits, and some slow requests have the journal at their
// root, each as a slow append or a lock wait behind one; explain says
// what lab fs reported of the same recording. Both trials are recorded
// and counted together: on this busy 2-core machine, in a recording
// made while other brokers took the CPUs, the few requests at the p99
// of 8 s were cpu-starved and 1 of 11 had the journal at its root.
func checkExplainJournal(t *testing.T, res *fsbench.Result, dirs ...string) {
	t.Helper()
	var slow, journalRoot, underCommit int64
	for _, dir := range dirs {
		findings, sum := explainProcess(t, dir)
		slow += sum.Slow
		journalRoot += sum.Journal
		underCommit += sum.SlowWritesUnderCommit
		for _, f := range findings {
			if f.Root == explain.RootJournal && f.Cause != explain.CauseSlowWrite && f.Cause != explain.CauseLockWait {
				t.Errorf("explain %s: root journal under cause %s: %s", dir, f.Cause, f.Detail)
			}
		}
		checkLabFSExplained(t, res, dir, sum)
	}
	if underCommit == 0 {
		t.Errorf("explain of ext4: no slow append under a journal commit")
	}
	if journalRoot == 0 {
		t.Errorf("explain of ext4: none of %d slow requests with the journal at its root", slow)
	}
}

// checkLabFSExplained: lab fs's own explain line of the run recorded in
// dir counts what `kscope explain DIR` does.
func checkLabFSExplained(t *testing.T, res *fsbench.Result, dir string, sum *explain.Summary) {
	t.Helper()
	for _, r := range res.Runs {
		if r.Recording != dir {
			continue
		}
		if e := r.Explain; e == nil || e.Slow != sum.Slow || e.JournalRoot != sum.Journal || e.Produce != sum.ProduceRequests {
			t.Errorf("lab fs's explain of %s %+v, kscope explain: %d of %d slow, journal root %d", dir, r.Explain, sum.Slow, sum.ProduceRequests, sum.Journal)
		}
		return
	}
	t.Errorf("no run of lab fs recorded in %s", dir)
}

// logExplain logs what explain says of a recording.
func logExplain(t *testing.T, dir string) {
	t.Helper()
	explainProcess(t, dir)
}

// explainProcess runs `kscope explain DIR --format json` as a process,
// logs its causes and returns its findings and summary.
func explainProcess(t *testing.T, dir string) ([]*explain.Finding, *explain.Summary) {
	t.Helper()
	cmd := helperCommand(t.Context(), "explain", dir, "--format", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kscope explain %s: %v\n%s", dir, err, stderr.String())
	}
	var findings []*explain.Finding
	var sum *explain.Summary
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasPrefix(line, `{"summary":`) {
			var s struct{ Summary *explain.Summary }
			if err := json.Unmarshal([]byte(line), &s); err != nil {
				t.Fatalf("explain summary: %v", err)
			}
			sum = s.Summary
			continue
		}
		f := new(explain.Finding)
		if err := json.Unmarshal([]byte(line), f); err != nil {
			t.Fatalf("explain finding %q: %v", line, err)
		}
		findings = append(findings, f)
	}
	if sum == nil {
		t.Fatalf("kscope explain %s: no summary line:\n%s", dir, out)
	}
	byCause := map[string]int{}
	for _, f := range findings {
		byCause[fmt.Sprintf("%s (root %q)", f.Cause, f.Root)]++
	}
	t.Logf("kscope explain %s: %d of %d produce requests slow (> %.1f ms, %s); journal root %d; %d slow writes, %d under a commit; by cause: %v",
		filepath.Base(dir), sum.Slow, sum.ProduceRequests, sum.ThresholdMs, sum.ThresholdFrom, sum.Journal, sum.SlowWritesTotal, sum.SlowWritesUnderCommit, byCause)
	return findings, sum
}

// slowdiskMounts lists the emulators' FUSE mounts under dir.
func slowdiskMounts(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		// mountinfo: ... mount-point ... - fstype source options
		f := strings.Fields(line)
		sep := -1
		for i, x := range f {
			if x == "-" {
				sep = i
				break
			}
		}
		if sep < 0 || sep+1 >= len(f) || len(f) < 5 {
			continue
		}
		if strings.HasPrefix(f[4], dir+"/") && f[sep+1] == slowdisk.FSType {
			out = append(out, f[4])
		}
	}
	return out
}
