package fsbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

func compareResult(na, nb int, u float64) compare.MannWhitneyResult {
	return compare.MannWhitneyResult{NA: na, NB: nb, U: u, P: 0.001}
}

func TestParseVariants(t *testing.T) {
	vs, err := ParseVariants(DefaultVariants)
	if err != nil || len(vs) != 4 {
		t.Fatalf("default: %v %v", vs, err)
	}
	want := map[string][2]string{
		"ext4":            {"mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/loop9", "mount -t ext4 /dev/loop9 /m"},
		"ext4-writeback":  {"mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 /dev/loop9", "mount -t ext4 -o data=writeback /dev/loop9 /m"},
		"ext4-fastcommit": {"mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 -O fast_commit /dev/loop9", "mount -t ext4 /dev/loop9 /m"},
		"xfs":             {"mkfs.xfs -q -f /dev/loop9", "mount -t xfs /dev/loop9 /m"},
	}
	for _, v := range vs {
		if got := strings.Join(v.MkfsCommand("/dev/loop9"), " "); got != want[v.Name][0] {
			t.Errorf("%s mkfs: %q", v.Name, got)
		}
		if got := strings.Join(v.MountCommand("/dev/loop9", "/m"), " "); got != want[v.Name][1] {
			t.Errorf("%s mount: %q", v.Name, got)
		}
	}
	// The package's table is not changed by a caller's edits.
	vs[0].MkfsArgs[0] = "-X"
	if Variants[0].MkfsArgs[0] == "-X" {
		t.Error("ParseVariants shares the package's mkfs args")
	}
	for _, bad := range []string{"", "ext3", "ext4,ext4", ","} {
		if _, err := ParseVariants(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestParseStallNoiseSize(t *testing.T) {
	s, err := ParseStall("fsfreeze:300ms@every10s")
	if err != nil || s.Duration != 300*time.Millisecond || s.Period != 10*time.Second {
		t.Fatalf("%+v %v", s, err)
	}
	if s.String() != "fsfreeze:300ms@every10s" {
		t.Errorf("String %q", s)
	}
	for _, bad := range []string{"freeze:1s@every2s", "fsfreeze:1s", "fsfreeze:2s@every1s", "fsfreeze:0s@every1s", "fsfreeze:x@everyy"} {
		if _, err := ParseStall(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if s, err := ParseStall(""); s != nil || err != nil {
		t.Errorf("empty: %v %v", s, err)
	}
	n, err := ParseNoise("fsync-writer")
	if err != nil || n.Bytes != 256<<10 {
		t.Fatalf("%+v %v", n, err)
	}
	if n, err = ParseNoise("fsync-writer:1MiB"); err != nil || n.Bytes != 1<<20 {
		t.Fatalf("%+v %v", n, err)
	}
	for _, bad := range []string{"fsync", "fsync-writer:1", "fsync-writer:1GiB"} {
		if _, err := ParseNoise(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for in, want := range map[string]int64{"3GiB": 3 << 30, "512M": 512 << 20, "4096": 4096, "256KiB": 256 << 10} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("%q: %d %v", in, got, err)
		}
	}
}

func TestLoadWorkload(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "w.json")
	os.WriteFile(p, []byte(`{"rate": 500, "duration": "7s", "acks": "1", "partitions": 2}`), 0o644)
	w, err := LoadWorkload(p)
	if err != nil {
		t.Fatal(err)
	}
	bc, err := w.BenchConfig("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	if bc.Rate != 500 || bc.Duration != 7*time.Second || bc.Warmup != 5*time.Second || bc.Acks != "1" || bc.Idempotent || bc.Partitions != 2 || bc.Producers != 2 {
		t.Errorf("%+v", bc)
	}
	os.WriteFile(p, []byte(`{"rate": 500, "durration": "7s"}`), 0o644)
	if _, err := LoadWorkload(p); err == nil {
		t.Error("unknown field: no error")
	}
	os.WriteFile(p, []byte(`{"rate": -1}`), 0o644)
	if _, err := LoadWorkload(p); err == nil {
		t.Error("negative rate: no error")
	}
}

func TestStat(t *testing.T) {
	s := stat([]float64{1, 2, 3})
	if s.Mean != 2 || s.CI95 == nil || math.Abs(*s.CI95-4.303/math.Sqrt(3)) > 1e-9 {
		t.Errorf("%+v", s)
	}
	if s := stat([]float64{5}); s.Mean != 5 || s.CI95 != nil {
		t.Errorf("one value: %+v", s)
	}
	for df, want := range map[int]float64{1: 12.706, 30: 2.042, 40: 2.021, 60: 2.000, 120: 1.980, 100000: 1.960} {
		if got := tQuantile975(df); math.Abs(got-want) > 0.0015 {
			t.Errorf("t(%d) = %.4f, want %.3f", df, got, want)
		}
	}
}

func TestCountAbove(t *testing.T) {
	h := hdrhistogram.New(1, 3_600_000_000, 3)
	for i := int64(1); i <= 100; i++ {
		h.RecordValue(i * 1000) // 1..100 ms in µs
	}
	if n := countAbove(h, 65000); n != 35 {
		t.Errorf("over 65 ms: %d, want 35", n)
	}
}

// fakeRuns makes trials of a variant whose per-second latencies are base
// ms (plus a little spread), for the statistics only.
func fakeRuns(variant string, trials int, base float64) []*RunResult {
	var out []*RunResult
	for tr := 1; tr <= trials; tr++ {
		r := &RunResult{Variant: variant, Trial: tr, MsgsPerSec: 2000, P50Ms: base / 10, P99Ms: base, P999Ms: base * 2, MaxMs: base * 3,
			OverSLOPct: base / 100, WriteP99Ms: 0.05, JournalP99Ms: 10, JournalPerSec: 20, JournalKind: "jbd2-commit"}
		for s := 0; s < 20; s++ {
			d := float64((s*7+tr*3)%10) / 100
			r.Seconds = append(r.Seconds, SecondSample{MsgsPerSec: 2000 + d, P50Ms: ptr(base/10 + d), P99Ms: ptr(base + d), MaxMs: ptr(base*3 + d),
				WriteP99Ms: ptr(0.05 + d/1000), JournalCommits: 20, JournalP99Ms: ptr(10 + d)})
		}
		out = append(out, r)
	}
	return out
}

func fakeResult() *Result {
	vs, _ := ParseVariants("ext4,xfs,ext4-writeback")
	res := &Result{Variants: vs, Trials: 3, Workload: DefaultWorkload(), SLOMs: 65, Threshold: 0.05, Alpha: 0.05, Kafka: "4.1.2"}
	res.Runs = append(res.Runs, fakeRuns("ext4", 3, 40)...)
	res.Runs = append(res.Runs, fakeRuns("xfs", 3, 8)...)
	res.Runs = append(res.Runs, fakeRuns("ext4-writeback", 3, 40)...)
	summarize(res)
	return res
}

func TestVerdicts(t *testing.T) {
	res := fakeResult()
	if len(res.Summary) != 3 || len(res.Verdicts) != 2 {
		t.Fatalf("summary %d, verdicts %d", len(res.Summary), len(res.Verdicts))
	}
	get := func(c *Comparison, key string) *VerdictRow {
		for _, r := range c.Rows {
			if r.Metric == key {
				return r
			}
		}
		t.Fatalf("no %s", key)
		return nil
	}
	xfs, wb := res.Verdicts[0], res.Verdicts[1]
	for _, key := range []string{"produce_p50_ms", "produce_p99_ms", "produce_max_ms", "over_slo_pct"} {
		if r := get(xfs, key); r.Verdict != Better || r.ChangePct == nil || *r.ChangePct > -50 {
			t.Errorf("xfs %s: %+v", key, r)
		}
		if r := get(wb, key); r.Verdict != NoChange {
			t.Errorf("writeback %s: %+v", key, r)
		}
	}
	if r := get(xfs, "msgs_per_sec"); r.Verdict != NoChange {
		t.Errorf("msgs/s: %+v", r)
	}
	// A single variant: a summary, no verdicts; one trial: no interval.
	one := &Result{Variants: res.Variants[:1], Trials: 1, Runs: fakeRuns("ext4", 1, 40), Threshold: 0.05, Alpha: 0.05}
	summarize(one)
	if len(one.Verdicts) != 0 || one.Summary[0].Metrics["produce_p99_ms"].CI95 != nil || len(one.Warnings) == 0 {
		t.Errorf("one trial: %+v %+v", one.Verdicts, one.Summary[0])
	}
}

func TestJudgeEdges(t *testing.T) {
	sig := func(u float64) VerdictRow {
		return VerdictRow{PAdjusted: 0.001, Test: compareResult(10, 10, u)}
	}
	r := sig(90)
	r.A, r.B = 0, 1
	judge(&r, -1, 0.05, 0.05)
	if r.Verdict != Worse || r.ChangePct != nil {
		t.Errorf("from 0: %+v", r)
	}
	r = sig(10) // B's seconds lower while its mean is higher
	r.A, r.B = 1, 2
	judge(&r, -1, 0.05, 0.05)
	if r.Verdict != NoChange || r.Reason == "" {
		t.Errorf("direction: %+v", r)
	}
	r = sig(90)
	r.A, r.B = 10, 20
	judge(&r, 0, 0.05, 0.05)
	if r.Verdict != Higher {
		t.Errorf("neutral: %+v", r)
	}
}

func TestOutputs(t *testing.T) {
	res := fakeResult()
	res.Start, res.End = time.Unix(1700000000, 0), time.Unix(1700000600, 0)
	var tab bytes.Buffer
	if err := WriteTable(&tab, res); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ext4-writeback", "xfs", "±", "better", "no change", "Runs, in the order they ran"} {
		if !strings.Contains(tab.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tab.String())
		}
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, res); err != nil {
		t.Fatal(err)
	}
	h := page.String()
	for _, want := range []string{"Content-Security-Policy", "<svg", `id="verdicts"`, "mkfs.ext4 -q -F", "data=writeback"} {
		if !strings.Contains(h, want) {
			t.Errorf("HTML lacks %q", want)
		}
	}
	for _, bad := range []string{"<script", "http://", "https://"} {
		if strings.Contains(h, bad) {
			t.Errorf("HTML has %q", bad)
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, res); err != nil {
		t.Fatal(err)
	}
	var back Result
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || len(back.Runs) != 9 || back.Workload.Duration != DefaultWorkload().Duration {
		t.Errorf("JSON round trip: %v %d", err, len(back.Runs))
	}
}

func TestStackAndState(t *testing.T) {
	dir := t.TempDir()
	st := newStack(dir)
	var order []string
	mk := func(kind, path string, fail bool) *item {
		return &item{Kind: kind, Path: path, undo: func() error {
			order = append(order, path)
			if fail {
				return errors.New("busy")
			}
			return nil
		}}
	}
	for _, it := range []*item{mk(kindImage, "a", false), mk(kindLoop, "b", true), mk(kindTask, "c", false), mk(kindMount, "d", false)} {
		if err := st.push(it); err != nil {
			t.Fatal(err)
		}
	}
	s, err := readState(dir)
	if err != nil || len(s.Resources) != 3 || s.PID != os.Getpid() {
		t.Fatalf("state %+v %v", s, err)
	}
	err = st.unwind(0)
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("unwind error %v", err)
	}
	if strings.Join(order, "") != "dcba" {
		t.Errorf("order %v", order)
	}
	// The one that failed stays listed for Cleanup.
	s, _ = readState(dir)
	if len(s.Resources) != 1 || s.Resources[0].Path != "b" {
		t.Errorf("after unwind: %+v", s.Resources)
	}
	// The lock excludes a second run.
	f, err := lockWorkDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockWorkDir(dir); err == nil {
		t.Error("second lock taken")
	}
	f.Close()
}

func TestMountHelpers(t *testing.T) {
	for _, c := range []struct {
		dir, path string
		in        bool
	}{{"/w", "/w", true}, {"/w", "/w/run/x", true}, {"/w", "/wx", false}, {"/w", "/", false}, {"/w", "/w/../x", false}} {
		if within(c.dir, c.path) != c.in {
			t.Errorf("within(%q, %q) != %v", c.dir, c.path, c.in)
		}
	}
	m, err := mountsUnder("/")
	if err != nil || len(m) == 0 {
		t.Errorf("mounts under /: %v %v", m, err)
	}
}

// With the load results kept, the produce latency verdicts and the shares
// above thresholds come from internal/bench/compare: a variant whose every
// trial has a 300 ms stall is worse over the SLO, one like the baseline
// is not.
func TestVerdictsFromLoads(t *testing.T) {
	vs, _ := ParseVariants("ext4,xfs,ext4-writeback")
	res := &Result{Variants: vs, Trials: 3, Workload: DefaultWorkload(), SLOMs: 65, Threshold: 0.05, Alpha: 0.05}
	seed := uint64(1)
	for _, v := range []struct {
		name  string
		stall bool
	}{{"ext4", false}, {"xfs", true}, {"ext4-writeback", false}} {
		for _, r := range fakeRuns(v.name, 3, 40) {
			spec := comparetest.Spec{Seed: seed, Seconds: 20, Rate: 2000, RateNoise: 0.02, MedianUs: 2000, Sigma: 0.5, PerSecond: 400}
			if v.stall {
				spec.Stalls = []comparetest.Stall{{Second: 9, Ms: 300}}
			}
			seed++
			r.Load = comparetest.Result(spec)
			res.Runs = append(res.Runs, r)
		}
	}
	summarize(res)
	if len(res.Verdicts) != 2 {
		t.Fatalf("%d verdicts: %v", len(res.Verdicts), res.Warnings)
	}
	verdict := func(c *Comparison, key string) string {
		for _, r := range c.Rows {
			if r.Metric == key {
				return r.Verdict
			}
		}
		return "missing"
	}
	if got := verdict(res.Verdicts[0], "over_slo_pct"); got != Worse {
		t.Errorf("xfs (stalled) over SLO: %s, want %s", got, Worse)
	}
	if got := verdict(res.Verdicts[1], "over_slo_pct"); got != NoChange {
		t.Errorf("ext4-writeback over SLO: %s, want %s", got, NoChange)
	}
	// compare tests no maximum (one value): the row says so, and its
	// change is the maxima's, not "from 0".
	for _, r := range res.Verdicts[0].Rows {
		if r.Metric == "produce_max_ms" && (r.Verdict != NotTested || r.ChangePct == nil || strings.Contains(verdictCell(r), "from 0")) {
			t.Errorf("xfs max: %q (%s), want %s with the change of the maxima", verdictCell(r), r.Verdict, NotTested)
		}
	}
	for _, s := range res.Summary {
		if len(s.Above) != 4 { // 10, 50, 65 (the SLO), 100 ms
			t.Fatalf("%s: %d shares above, want 4", s.Variant, len(s.Above))
		}
		for _, a := range s.Above {
			if a.Share.Lo > a.Share.Value || a.Share.Hi < a.Share.Value || a.Total != 3*20*400 {
				t.Errorf("%s > %g ms: %+v", s.Variant, a.AboveMs, a)
			}
		}
	}
	if s := res.Summary[1].Above[1]; s.AboveMs != 50 || s.Count == 0 {
		t.Errorf("xfs > 50 ms: %+v, want its stalls' requests", s)
	}
	var tab bytes.Buffer
	if err := WriteTable(&tab, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tab.String(), "Produce requests above thresholds") || !strings.Contains(tab.String(), ": worse") {
		t.Errorf("table lacks the shares above thresholds with verdicts:\n%s", tab.String())
	}
	var page bytes.Buffer
	if err := WriteHTML(&page, res); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="above"`) || !strings.Contains(page.String(), `class="num worse"`) {
		t.Error("HTML lacks the shares above thresholds with a worse verdict")
	}
}

// TestOverSLOUntestedKeepsShares: compare tests no share at or below the
// baseline's p99, so when the baseline's p99 is above the SLO (ext4 on
// an emulated hdd-busy device: p99 300 ms, 64% of its requests over
// 65 ms) the over-SLO row is untested; it must still carry the
// variants' shares (it said 0 and 0).
func TestOverSLOUntestedKeepsShares(t *testing.T) {
	cases := []struct {
		name                 string
		baseMedianUs         float64
		baseShare, fastShare float64
		wantUntested         bool
	}{
		{"baseline p99 above the SLO", 90000, 60, 0.1, true},
		{"none above the SLO in either", 2000, 0, 0, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, _ := ParseVariants("ext4,xfs")
			res := &Result{Variants: vs, Trials: 2, Workload: DefaultWorkload(), SLOMs: 65, Threshold: 0.05, Alpha: 0.05}
			seed := uint64(1)
			for _, v := range []struct {
				name     string
				medianUs float64
				share    float64
			}{{"ext4", c.baseMedianUs, c.baseShare}, {"xfs", 2000, c.fastShare}} {
				for _, r := range fakeRuns(v.name, 2, 40) {
					r.Load = comparetest.Result(comparetest.Spec{Seed: seed, Seconds: 20, Rate: 2000, RateNoise: 0.02, MedianUs: v.medianUs, Sigma: 0.5, PerSecond: 400})
					r.OverSLOPct = v.share
					seed++
					res.Runs = append(res.Runs, r)
				}
			}
			summarize(res)
			if len(res.Verdicts) != 1 {
				t.Fatalf("%d verdicts: %v", len(res.Verdicts), res.Warnings)
			}
			var row *VerdictRow
			for _, r := range res.Verdicts[0].Rows {
				if r.Metric == "over_slo_pct" {
					row = r
				}
			}
			if row == nil {
				t.Fatal("no over_slo_pct row")
			}
			untested := strings.HasPrefix(row.Reason, "not tested")
			if untested != c.wantUntested {
				t.Fatalf("over SLO row %+v: untested %v, want %v", row, untested, c.wantUntested)
			}
			if untested && (row.A != c.baseShare || row.B != c.fastShare) {
				t.Errorf("untested over SLO row: A %v B %v, want the shares %v and %v", row.A, row.B, c.baseShare, c.fastShare)
			}
		})
	}
}
