package cli

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// TestBenchCompareRefusesContradictions: a result that has no per-second
// series, or whose totals its series contradict, cannot be compared (the
// tests run on the seconds, so the totals would be shown and never
// tested): it is bad input with the reason, not "no regression". A FIFO
// as a result is refused at once.
func TestBenchCompareRefusesContradictions(t *testing.T) {
	slower := func() *bench.Result {
		s := benchSpec(2)
		s.MedianUs *= 22 // p99 +2 100%
		return comparetest.Result(s)
	}
	tests := []struct {
		name string
		b    func(t *testing.T, dir string) string
		want string
	}{
		{"no per-second series", func(t *testing.T, dir string) string {
			r := slower()
			r.Series = nil
			return writeResult(t, dir, "b.json", r)
		}, "per-second series"},
		{"no series, no duration", func(t *testing.T, dir string) string {
			r := slower()
			r.Series, r.Workload.DurationMs = nil, 0
			return writeResult(t, dir, "b.json", r)
		}, "per-second series"},
		{"percentiles of another run", func(t *testing.T, dir string) string {
			r := comparetest.Result(benchSpec(2))
			r.Latency = slower().Latency // same counts, 22 times the latency
			return writeResult(t, dir, "b.json", r)
		}, "allow"},
		{"more acked in the seconds than in all", func(t *testing.T, dir string) string {
			r := comparetest.Result(benchSpec(2))
			r.Totals.Acked /= 2
			return writeResult(t, dir, "b.json", r)
		}, "acked"},
		{"throughput the seconds rule out", func(t *testing.T, dir string) string {
			r := comparetest.Result(benchSpec(2))
			r.Totals.MsgsPerSec *= 10
			return writeResult(t, dir, "b.json", r)
		}, "msgs_per_sec"},
		{"seconds missing", func(t *testing.T, dir string) string {
			r := comparetest.Result(benchSpec(2))
			r.Series = r.Series[:10]
			return writeResult(t, dir, "b.json", r)
		}, "10 seconds"},
		{"a FIFO", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "b.json")
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, "not a regular file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			a := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
			b := tc.b(t, dir)
			out, errOut := runBounded(t, "bench", "compare", a, b)
			if out.code != ExitBadInput || !strings.Contains(errOut, tc.want) || !strings.Contains(errOut, b) || strings.Count(errOut, "\n") != 1 {
				t.Errorf("exit %d, want %d with one line naming %s and %q:\n%s%s", out.code, ExitBadInput, b, tc.want, errOut, out.stdout)
			}
		})
	}
	// A whole result is still compared (the checks refuse no real run).
	dir := t.TempDir()
	a := writeResult(t, dir, "a.json", comparetest.Result(benchSpec(1)))
	b := writeResult(t, dir, "b.json", slower())
	if out, errOut := runBounded(t, "bench", "compare", a, b); out.code != ExitFailure {
		t.Errorf("a slower run: exit %d, want %d: %s", out.code, ExitFailure, errOut)
	}
}
