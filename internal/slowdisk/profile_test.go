package slowdisk

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNamedProfilesValid(t *testing.T) {
	for _, name := range Names() {
		p, ok := Named(name)
		if !ok || p.Name != name || p.Source == "" {
			t.Errorf("%s: ok %v, name %q, source %q", name, ok, p.Name, p.Source)
		}
		if err := p.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, want := range []string{"fast", "cloud-baseline", "burst-spent", "hdd-busy"} {
		if !slices.Contains(Names(), want) {
			t.Errorf("no profile %q", want)
		}
	}
}

// TestDrawFollowsQuantiles: the draws of a distribution have its
// quantiles (within 3% of the range, 20000 draws), and a seed gives the
// same draws.
func TestDrawFollowsQuantiles(t *testing.T) {
	p, _ := Named("burst-spent")
	d := &p.Write
	rng := rand.New(rand.NewPCG(7, 0))
	draws := make([]time.Duration, 20000)
	for i := range draws {
		draws[i] = d.Draw(rng)
	}
	slices.Sort(draws)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		got, want := draws[int(q*float64(len(draws)))], d.Quantile(q)
		if diff := (got - want).Abs(); float64(diff) > 0.03*float64(want)+float64(time.Millisecond) {
			t.Errorf("p%g: drew %v, profile %v", q*100, got, want)
		}
	}
	again := rand.New(rand.NewPCG(7, 0))
	if got := d.Draw(again); got != draws[0] && !slices.Contains(draws, got) {
		t.Errorf("seed 7 drew %v, not one of the first run's", got)
	}
}

func TestParseProfileFile(t *testing.T) {
	p, err := Resolve("testdata/profile.json")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "prod-broker-3" || p.MaxInflight != 16 || len(p.Write.Points) != 4 {
		t.Fatalf("%+v", p)
	}
	if got := p.Write.Quantile(0.99); got != 40*time.Millisecond {
		t.Errorf("write p99 %v", got)
	}
}

func TestParseIotraceSummary(t *testing.T) {
	p, err := Resolve("testdata/iotrace-summary.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	// Slot middles: 3/4 of each upper edge.
	if got, want := p.Flush.Quantile(0.99), time.Duration(134.218*0.75*float64(time.Millisecond)); (got - want).Abs() > time.Microsecond {
		t.Errorf("flush p99 %v, want %v", got, want)
	}
	if got := p.Read.Quantile(1); got > 2*time.Millisecond {
		t.Errorf("read max %v", got)
	}
	if !strings.Contains(p.Name, "#7:0") {
		t.Errorf("name %q", p.Name)
	}
}

// TestHostileProfiles: every bad file is refused with one line naming
// the file and the line:column of what is wrong.
func TestHostileProfiles(t *testing.T) {
	good := `{"read":{"percentiles":[{"p":50,"ms":1}]},"write":{"percentiles":[{"p":50,"ms":1}]},"flush":{"percentiles":[{"p":50,"ms":1}]}}`
	cases := []struct {
		name, content, want string
	}{
		{"empty", "", "1:1: bad device profile: the file ends"},
		{"not json", "hello", "1:1: bad device profile: invalid character"},
		{"truncated", `{"read":{"percentiles":[`, "ends inside"},
		{"negative", strings.Replace(good, `"ms":1}]},"write"`, `"ms":-5}]},"write"`, 1), `1:25: bad device profile: read: p50: -5 ms`},
		{"absurd", strings.Replace(good, `"ms":1}]},"flush"`, `"ms":1e9}]},"flush"`, 1), `bad device profile: write: p50: 1e+09 ms`},
		{"unsorted p", "{\n\"read\":{\"percentiles\":[{\"p\":90,\"ms\":1},\n  {\"p\":50,\"ms\":2}]},\"write\":{\"percentiles\":[{\"p\":50,\"ms\":1}]},\"flush\":{\"percentiles\":[{\"p\":50,\"ms\":1}]}}",
			"3:3: bad device profile: read: p50 after p90: percentiles must increase"},
		{"decreasing latency", strings.Replace(good, `[{"p":50,"ms":1}]},"write"`, `[{"p":50,"ms":9},{"p":99,"ms":2}]},"write"`, 1), "1:41: bad device profile: read: p99 2 ms is less than"},
		{"percentile over 100", strings.Replace(good, `"p":50,"ms":1}]},"flush"`, `"p":150,"ms":1}]},"flush"`, 1), "bad device profile: write: percentile 150"},
		{"no flush", `{"read":{"percentiles":[{"p":50,"ms":1}]},"write":{"percentiles":[{"p":50,"ms":1}]}}`, `no "flush" distribution`},
		{"no points", strings.Replace(good, `[{"p":50,"ms":1}]},"write"`, `[]},"write"`, 1), "read: no percentiles"},
		{"unknown field", `{"raed":1}`, `1:2: bad device profile: json: unknown field "raed"`},
		{"wrong type", `{"read":{"min_ms":"fast"}}`, "1:25: bad device profile: read.min_ms: a string where a float64 belongs"},
		{"trailing", good + "{}", "more after the profile's object"},
		{"depth", good[:len(good)-1] + `,"max_inflight":100000}`, "max_inflight 100000"},
		{"nan-like", strings.Replace(good, `"ms":1}]},"write"`, `"ms":NaN}]},"write"`, 1), "invalid character 'N'"},
		{"iotrace bad dev", `{"dev":"7:0\u001b[31m","kind":"blk-write","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}`, `device 7:0\x1b[31m: want MAJOR:MINOR`},
		{"iotrace negative", `{"dev":"7:0","kind":"blk-write","count":1,"p50_le_ms":-1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}`, ":1: bad device profile: 7:0 blk-write: p50 -1 ms"},
		{"iotrace unsorted", `{"dev":"7:0","kind":"blk-write","count":1,"p50_le_ms":9,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}` + "\n", "p99 1 ms is less than"},
		{"iotrace no quantile", `{"dev":"7:0","kind":"blk-write","count":1}`, "no p50"},
		{"iotrace only commits", `{"dev":"7:0","kind":"jbd2-commit","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}`, "no blk-read, blk-write or blk-flush"},
		{"iotrace two devices", `{"dev":"7:0","kind":"blk-write","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}` + "\n" +
			`{"dev":"8:0","kind":"blk-write","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}`, "block requests of 2 devices (7:0, 8:0): pick one as"},
		{"iotrace garbage line", `{"dev":"7:0","kind":"blk-write","count":1,"p50_le_ms":1,"p99_le_ms":1,"p99_9_le_ms":1,"max_le_ms":1}` + "\n{oops", ":2: bad device profile: not an iotrace summary line"},
	}
	dir := t.TempDir()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, "p"+string(rune('a'+i)))
			if err := os.WriteFile(path, []byte(c.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Resolve(path)
			if err == nil {
				t.Fatal("accepted")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, path+":") || !strings.Contains(msg, c.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want %s:... containing %q, one line", msg, path, c.want)
			}
			if !errors.Is(err, ErrBadProfile) {
				t.Errorf("error %q does not wrap ErrBadProfile", msg)
			}
		})
	}
}

// TestProfileNotAFile: a directory, a missing file, a FIFO are refused
// (safefile), and the message lists the named profiles.
func TestProfileNotAFile(t *testing.T) {
	for _, spec := range []string{t.TempDir(), filepath.Join(t.TempDir(), "missing"), "hdd"} {
		_, err := Resolve(spec)
		if err == nil || !strings.Contains(err.Error(), "not one of fast, cloud-baseline, burst-spent, hdd-busy") {
			t.Errorf("%s: %v", spec, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/profile.json", "testdata/iotrace-summary.jsonl"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, "")
	}
	f.Add([]byte(`{"read":{"percentiles":[{"p":50,"ms":1}]}}`), "7:0")
	f.Fuzz(func(t *testing.T, b []byte, dev string) {
		p, err := Parse("fuzz", dev, b)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q: want one line starting with the file", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("accepted an invalid profile: %v", err)
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for op := range numOps {
			if l := p.Dist(op).Draw(rng); l < 0 || l > MaxLatency {
				t.Fatalf("%s drew %v", op, l)
			}
		}
	})
}
