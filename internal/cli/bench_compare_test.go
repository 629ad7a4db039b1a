package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// runBenchCmd executes cmd with args as Main would and returns the exit code,
// stdout and the error Main would print.
func runBenchCmd(cmd *cobra.Command, args ...string) (int, string, string) {
	var out, errOut bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	err := cmd.Execute()
	if err == nil {
		return ExitOK, out.String(), ""
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code, out.String(), err.Error()
	}
	return ExitFailure, out.String(), err.Error()
}

func benchSpec(seed uint64) comparetest.Spec {
	return comparetest.Spec{Seed: seed, Seconds: 30, Rate: 2000, Target: 2000, RateNoise: 0.02, MedianUs: 2000, Sigma: 0.5}
}

func writeResult(t *testing.T, dir, name string, r *bench.Result) string {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBenchCompare(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
	same := writeResult(t, dir, "same.json", comparetest.Result(benchSpec(2)))
	slow := benchSpec(3)
	slow.Rate = 1600                       // 20% less throughput
	slow.Sigma = 0.5 + math.Log(1.3)/2.326 // p99 30% higher
	b := writeResult(t, dir, "slow.json", comparetest.Result(slow))
	twoPct := benchSpec(4)
	twoPct.Rate = 1960
	little := writeResult(t, dir, "little.json", comparetest.Result(twoPct))

	tests := []struct {
		name string
		args []string
		code int
		out  []string
		err  string
	}{
		{"same workload", []string{a, same}, ExitOK, []string{"no regression", "A (baseline): " + a}, ""},
		{"regression", []string{a, b}, ExitFailure, []string{"regression", "throughput  msgs/s", "-19.", "no change (within threshold)"}, "regressions: throughput msgs/s, throughput MB/s, service p90, service p99"},
		{"improvement is not a failure", []string{b, a}, ExitOK, []string{"improvement", "no regression"}, ""},
		{"2% below the threshold", []string{a, little}, ExitOK, []string{"within threshold"}, ""},
		{"2% with --threshold 1%", []string{a, little, "--threshold", "1%"}, ExitFailure, nil, "throughput msgs/s"},
		{"threshold as a fraction", []string{a, b, "--threshold", "0.5"}, ExitFailure, []string{"beyond 50.0%", "no change (within threshold)"}, "regression"},
		{"json", []string{a, b, "--format", "json"}, ExitFailure, []string{`"verdict": "regression"`, `"p_adjusted"`}, "regression"},
		{"one file", []string{a}, ExitBadInput, nil, "want two result files"},
		{"missing file", []string{a, filepath.Join(dir, "nope.json")}, ExitBadInput, nil, "nope.json"},
		{"threshold 5", []string{a, b, "--threshold", "5"}, ExitBadInput, nil, "for a percentage write 5%"},
		{"threshold junk", []string{a, b, "--threshold", "x%"}, ExitBadInput, nil, "want a percentage"},
		{"alpha", []string{a, b, "--alpha", "1.5"}, ExitBadInput, nil, `"1.5" for "--alpha"`},
		{"format", []string{a, b, "--format", "csv"}, ExitBadInput, nil, "csv"},
		{"unknown flag", []string{a, b, "--nope"}, ExitBadInput, nil, "unknown flag"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, msg := runBenchCmd(newBenchCompareCmd(), tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s\n%s", code, tc.code, msg, out)
			}
			for _, w := range tc.out {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(msg, tc.err) || strings.Contains(msg, "\n") {
				t.Errorf("error %q, want one line containing %q", msg, tc.err)
			}
			if tc.code == ExitFailure && !strings.Contains(out, "VERDICT") && !strings.Contains(out, `"rows"`) {
				t.Errorf("the comparison was not printed before the failure")
			}
		})
	}
}

func TestBenchCompareDamaged(t *testing.T) {
	dir := t.TempDir()
	good := comparetest.Result(benchSpec(1))
	a := writeResult(t, dir, "a.json", good)
	bad := comparetest.Result(benchSpec(2))
	bad.Latency[bench.LatencyService].P99Us = 1
	b := writeResult(t, dir, "damaged.json", bad)
	v2 := writeResult(t, dir, "v2.json", &bench.Result{Version: 2})
	junk := filepath.Join(dir, "junk.json")
	os.WriteFile(junk, []byte("\x1b[2J not json"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{a, b}, "damaged.json: damaged result: latency.service: histogram's p99"},
		{[]string{v2, a}, "v2.json: result version 2; this kscope reads version 1"},
		{[]string{a, junk}, "junk.json: not a kscope bench result"},
	} {
		code, _, msg := runBenchCmd(newBenchCompareCmd(), tc.args...)
		if code != ExitBadInput || !strings.Contains(msg, tc.want) {
			t.Errorf("%v: exit %d %q, want 2 and %q", tc.args, code, msg, tc.want)
		}
	}
}

func TestBenchReport(t *testing.T) {
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
	b := writeResult(t, dir, "b.json", comparetest.Result(benchSpec(2)))
	code, out, msg := runBenchCmd(newBenchReportCmd(), a, b, "--merged")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, msg)
	}
	for _, w := range []string{"/001/a.json", "/001/b.json", "merged", "service p99 (ms)", "lost", "client cpu/msg"} {
		if !strings.Contains(out, w) {
			t.Errorf("report lacks %q:\n%s", w, out)
		}
	}
	if code, _, msg := runBenchCmd(newBenchReportCmd()); code != ExitBadInput {
		t.Errorf("no files: exit %d %s", code, msg)
	}
	if code, _, msg := runBenchCmd(newBenchReportCmd(), a, filepath.Join(dir, "missing.json")); code != ExitBadInput || !strings.Contains(msg, "missing.json") {
		t.Errorf("missing file: exit %d %s", code, msg)
	}
	// Histograms that cannot be merged: one without any.
	r := comparetest.Result(benchSpec(3))
	r.Latency[bench.LatencyService].Histogram = ""
	c := writeResult(t, dir, "c.json", r)
	if code, _, msg := runBenchCmd(newBenchReportCmd(), a, c, "--merged"); code != ExitBadInput || !strings.Contains(msg, "no histogram") {
		t.Errorf("unmergeable: exit %d %s", code, msg)
	}
	if code, _, msg := runBenchCmd(newBenchReportCmd(), a, c); code != ExitOK {
		t.Errorf("without --merged: exit %d %s", code, msg)
	}
}

func TestThresholdFlag(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want float64
		ok   bool
	}{
		{"5%", 0.05, true}, {"0.05", 0.05, true}, {" 12.5 % ", 0.125, true}, {"150%", 1.5, true},
		{"0", 1e-12, true}, {"0%", 1e-12, true},
		{"5", 0, false}, {"1", 0, false}, {"-1%", 0, false}, {"NaN", 0, false}, {"inf%", 0, false}, {"", 0, false}, {"%", 0, false},
	} {
		var f thresholdFlag
		err := f.Set(tc.in)
		if (err == nil) != tc.ok || (tc.ok && math.Abs(float64(f)-tc.want) > 1e-15) {
			t.Errorf("Set(%q) = %v, %v; want %v ok=%v", tc.in, float64(f), err, tc.want, tc.ok)
		}
	}
	if f := thresholdFlag(compare.DefaultThreshold); f.String() != "5%" {
		t.Errorf("default prints as %s", f.String())
	}
}
