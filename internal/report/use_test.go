package report

import (
	"bytes"
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/use"
)

// A recording with use.jsonl (as kscope record writes it) gets the USE
// panel: CPU, disk and NIC charts and the table of verdicts; one without
// gets none.
func TestReportUsePanel(t *testing.T) {
	dir := t.TempDir() + "/rec"
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	for k := range 10 {
		// CPU saturated in seconds 3..6, loop3 throttled in 5..8, drops
		// on veth in 7.
		s := &use.Sample{Time: t0.Add(time.Duration(k+1) * time.Second), IntervalS: 1,
			CPU:   use.CPU{CPUs: 2, UtilPct: 30, RunQueue: 0.5, PSI: &use.Stall{SomePct: 1}},
			Disks: []use.Disk{{Name: "loop3", Dev: "7:3", UtilPct: 5}},
			NICs:  []use.NIC{{Name: "<veth>", QdiscDrops: i(0)}, {Name: "eth0"}},
			TCP:   &use.TCP{OutSegs: 100, RetransSegs: 0, RetransPct: f(0)},
		}
		if k >= 3 && k <= 6 {
			s.CPU.UtilPct, s.CPU.RunQueue, s.CPU.PSI.SomePct = 100, 6, 60
		}
		if k >= 5 && k <= 8 {
			s.Disks[0].Throttles = []use.Throttle{{Cgroup: "/kscope", Limit: "wbps", Max: 4e6, Rate: 4e6, Pct: 100}}
		}
		if k == 7 {
			s.NICs[0].QdiscDrops = i(40)
			s.TCP.RetransSegs, s.TCP.RetransPct = 5, f(5)
		}
		s.Verdict = use.Verdict(s, use.Thresholds{})
		if err := w.Use(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&recording.Meta{Tool: "test", Host: "h", Start: t0, End: t0.Add(11 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	meta, err := recording.ReadMeta(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(meta.Files, ","), recording.UseFile) {
		t.Errorf("meta files %v lack %s", meta.Files, recording.UseFile)
	}

	d, err := Build(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	p := d.Use
	if p == nil || p.Samples != 10 || p.Saturated != 6 || len(p.Disks) != 1 || len(p.Throttles) != 1 || len(p.NICDrops) != 1 {
		t.Fatalf("panel: %+v", p)
	}
	if p.RunQueue.Max() != 300 || p.Throttles[0].Series.Max() != 100 || p.NICDrops[0].Series.Max() != 40 || p.TCPRetrans.Max() != 5 {
		t.Errorf("maxima: runq %v throttle %v drops %v retrans %v", p.RunQueue.Max(), p.Throttles[0].Series.Max(), p.NICDrops[0].Series.Max(), p.TCPRetrans.Max())
	}
	want := map[string]int64{"cpu": 4, "disk loop3": 4, "nic <veth>": 1, "tcp": 1}
	for _, f := range p.Findings {
		if f.Kind != use.KindSaturation {
			continue
		}
		if n, ok := want[f.Resource]; !ok || n != f.Intervals {
			t.Errorf("finding %+v, want %d intervals", f, want[f.Resource])
		}
		delete(want, f.Resource)
	}
	if len(want) > 0 {
		t.Errorf("findings missing: %v", want)
	}

	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, id := range []string{`id="` + UseCPUID + `"`, `id="` + UseDisksID + `"`, `id="` + UseNICsID + `"`, `id="use-verdicts"`,
		"run queue 6.0 &gt; 2 CPUs", "cgroup /kscope at 100.0% of wbps 4.0MB/s", "&lt;veth&gt;"} {
		if !strings.Contains(page, id) {
			t.Errorf("page lacks %s", id)
		}
	}
	if strings.Contains(page, "<veth>") || regexp.MustCompile(`(?i)<script`).MatchString(page) {
		t.Error("names are not escaped")
	}
	// Every polyline point is inside the chart.
	for _, m := range regexp.MustCompile(`points="([^"]*)"`).FindAllStringSubmatch(page, -1) {
		for _, pt := range strings.Fields(m[1]) {
			var x, y float64
			if _, err := fmt.Sscanf(pt, "%f,%f", &x, &y); err != nil || x < marginL-1 || x > chartW-marginR+1 || y < 0 || y > 400 {
				t.Errorf("point %q outside the chart", pt)
			}
		}
	}

	// Without use.jsonl: no panel.
	plain := t.TempDir() + "/plain"
	writeRecording(t, plain)
	d2, err := Build(plain, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := WriteHTML(&b, d2); err != nil {
		t.Fatal(err)
	}
	if d2.Use != nil || strings.Contains(b.String(), UseCPUID) {
		t.Error("a recording without use.jsonl has a USE panel")
	}
}

func TestSeriesMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := newSeries(time.Time{}, time.Second, 4)
	for k, v := range []float64{1, 5, 2, 3, 9, math.NaN()} {
		s.Add(t0.Add(time.Duration(k)*time.Second), v)
	}
	// Five seconds in columns of 1 s overflow 4 columns: pairs merged
	// keeping the larger.
	if s.Step != 2*time.Second || len(s.Vals) != 3 || s.Vals[0] != 5 || s.Vals[1] != 3 || s.Vals[2] != 9 || s.Max() != 9 {
		t.Fatalf("step %v vals %v", s.Step, s.Vals)
	}
	s.Add(t0.Add(-time.Hour), 100) // before the origin: dropped
	if s.Max() != 9 {
		t.Fatal("a value before the origin was kept")
	}
	for _, c := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {100, 100}, {101, 200}, {450, 500}, {7, 10}} {
		if got := niceCeil(c.in); math.Abs(got-c.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", c.in, got, c.want)
		}
	}
}
