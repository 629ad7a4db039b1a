package e2e

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/lab/versions"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// TestLabVersions runs `kscope lab versions` on two real releases with a
// short workload: each release's broker really is that release, every
// message is acknowledged, each RESULT.json loads for bench compare, and
// the comparison has throughput and latency rows with verdicts.
func TestLabVersions(t *testing.T) {
	labtest.RequireKafka(t)
	dir := t.TempDir()
	workload := filepath.Join(dir, "workload.json")
	if err := os.WriteFile(workload, []byte(`{"rate": 500, "duration": "6s", "warmup": "2s", "producers": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"lab", "versions", "--kafka", "3.9.1,4.1.2", "--workload", workload,
		"--work-dir", filepath.Join(dir, "work"), "--heap-mb", "384", "--format", "json"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("lab versions: exit %d: %s", code, errOut.String())
	}
	var res versions.Result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("lab versions --format json: %v: %s", err, out.String())
	}
	if len(res.Runs) != 2 || len(res.Comparisons) != 1 {
		t.Fatalf("%d runs and %d comparisons, want 2 and 1", len(res.Runs), len(res.Comparisons))
	}
	for i, want := range []string{"3.9.1", "4.1.2"} {
		r := res.Runs[i]
		if r.Version != want || r.Detected != want {
			t.Errorf("run %d: version %q, the broker ran %q; want %s", i, r.Version, r.Detected, want)
		}
		br, err := compare.Load(r.ResultFile)
		if err != nil {
			t.Fatalf("%s: %v", r.ResultFile, err)
		}
		if br.Totals.Acked == 0 || br.Totals.Acked != br.Totals.Sent || br.Totals.Failed != 0 {
			t.Errorf("Kafka %s: sent %d acked %d failed %d", want, br.Totals.Sent, br.Totals.Acked, br.Totals.Failed)
		}
		if r.BrokerCPUSeconds <= 0 {
			t.Errorf("Kafka %s: broker CPU %v s", want, r.BrokerCPUSeconds)
		}
	}
	c := res.Comparisons[0]
	rows := map[string]bool{}
	for _, row := range c.Rows {
		if row.Verdict == "" {
			t.Errorf("row %s %s has no verdict", row.Metric, row.Stat)
		}
		rows[row.Metric+" "+row.Stat] = true
	}
	for _, want := range []string{"throughput msgs/s", "service p99", "service p50"} {
		if !rows[want] {
			t.Errorf("comparison has no %q row: %v", want, rows)
		}
	}
	t.Logf("lab versions: %s", errOut.String())
}
