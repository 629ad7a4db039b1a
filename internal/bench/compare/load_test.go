package compare

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

func small(seed uint64) *bench.Result {
	return comparetest.Result(comparetest.Spec{Seed: seed, Seconds: 5, Rate: 100, Target: 100, RateNoise: 0.1, MedianUs: 1500, Sigma: 0.7, PerSecond: 50})
}

func write(t *testing.T, r *bench.Result) string {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "RESULT.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHistogramRoundTrip: a result written and loaded again has the same
// histograms, and they agree with the stored percentiles.
func TestHistogramRoundTrip(t *testing.T) {
	r := small(1)
	got, err := Load(write(t, r))
	if err != nil {
		t.Fatal(err)
	}
	for name, l := range r.Latency {
		h1, err := DecodeHistogram(l.Histogram)
		if err != nil {
			t.Fatal(err)
		}
		h2, err := DecodeHistogram(got.Latency[name].Histogram)
		if err != nil {
			t.Fatal(err)
		}
		if !h1.Equals(h2) || h2.TotalCount() != 250 || h2.ValueAtQuantile(99) != l.P99Us {
			t.Errorf("%s: histogram changed in the round trip", name)
		}
	}
	if len(got.Series) != 5 || got.Series[4].Latency[bench.LatencyService] != r.Series[4].Latency[bench.LatencyService] {
		t.Errorf("series changed in the round trip")
	}
}

func TestMergeLatency(t *testing.T) {
	a, b := small(1), small(2)
	m, err := MergeLatency([]*bench.Result{a, b, {}}, bench.LatencyService)
	if err != nil {
		t.Fatal(err)
	}
	ha, _ := DecodeHistogram(a.Latency[bench.LatencyService].Histogram)
	hb, _ := DecodeHistogram(b.Latency[bench.LatencyService].Histogram)
	ha.Merge(hb)
	if m.Count != 500 || m.P99Us != ha.ValueAtQuantile(99) || m.MaxUs != max(a.Latency[bench.LatencyService].MaxUs, b.Latency[bench.LatencyService].MaxUs) {
		t.Errorf("merged: %+v", m)
	}
	if err := checkLatency(m); err != nil {
		t.Errorf("merged latency does not verify: %v", err)
	}
	if m, err := MergeLatency([]*bench.Result{a}, "nope"); m != nil || err != nil {
		t.Errorf("absent series: %v %v", m, err)
	}
	a.Latency[bench.LatencyService].Histogram = ""
	if _, err := MergeLatency([]*bench.Result{a, b}, bench.LatencyService); err == nil {
		t.Error("merged a series without a histogram")
	}
}

// hugeHistogram is a valid encoding whose header declares 1 µs to
// MaxInt64 at 5 digits: a counts array of 6 million entries.
func hugeHistogram() string {
	var inner bytes.Buffer
	for _, v := range []any{int32(0x1c849303 | 0x10), int32(0), int32(0), int32(5), int64(1), int64(math.MaxInt64), float64(1)} {
		binary.Write(&inner, binary.BigEndian, v)
	}
	var z bytes.Buffer
	zw := zlib.NewWriter(&z)
	zw.Write(inner.Bytes())
	zw.Close()
	var outer bytes.Buffer
	binary.Write(&outer, binary.BigEndian, int32(0x1c849304|0x10))
	binary.Write(&outer, binary.BigEndian, int32(z.Len()))
	outer.Write(z.Bytes())
	return base64.StdEncoding.EncodeToString(outer.Bytes())
}

func TestLoadDamaged(t *testing.T) {
	tests := []struct {
		name   string
		damage func(r *bench.Result)
		want   string
	}{
		{"stored p99 differs", func(r *bench.Result) { r.Latency[bench.LatencyService].P99Us *= 2 }, "histogram's p99 is"},
		{"count differs", func(r *bench.Result) { r.Latency[bench.LatencyResponse].Count++ }, "histogram holds 250 values, count says 251"},
		{"not base64", func(r *bench.Result) { r.Latency[bench.LatencyService].Histogram = "!!!" }, "not base64"},
		{"not a histogram", func(r *bench.Result) {
			r.Latency[bench.LatencyService].Histogram = base64.StdEncoding.EncodeToString([]byte("hello, world"))
		}, "not a compressed V2 HdrHistogram"},
		{"truncated", func(r *bench.Result) {
			h := r.Latency[bench.LatencyService].Histogram
			raw, _ := base64.StdEncoding.DecodeString(h)
			r.Latency[bench.LatencyService].Histogram = base64.StdEncoding.EncodeToString(raw[:len(raw)-10])
		}, "histogram:"},
		{"bit flip in the counts", func(r *bench.Result) {
			h := r.Latency[bench.LatencyService].Histogram
			raw, _ := base64.StdEncoding.DecodeString(h)
			raw[len(raw)-6] ^= 0x40
			r.Latency[bench.LatencyService].Histogram = base64.StdEncoding.EncodeToString(raw)
		}, "histogram:"},
		{"huge geometry", func(r *bench.Result) { r.Latency[bench.LatencyService].Histogram = hugeHistogram() }, "header declares"},
		{"null latency", func(r *bench.Result) { r.Latency["x"] = nil }, "latency.x: null"},
		{"negative totals", func(r *bench.Result) { r.Totals.Lost = -1 }, "totals.lost is negative"},
		{"negative per second", func(r *bench.Result) { r.Series[2].MsgsPerSec = -5 }, "series[2]: negative"},
		{"wrong version", func(r *bench.Result) { r.Version = 2 }, "result version 2; this kscope reads version 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := small(1)
			tc.damage(r)
			p := write(t, r)
			_, err := Load(p)
			if err == nil {
				t.Fatal("loaded")
			}
			msg := err.Error()
			t.Log(msg)
			if !strings.Contains(msg, tc.want) || !strings.HasPrefix(msg, p+": ") || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming the file and containing %q", msg, tc.want)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "not a kscope bench result"},
		{"not json", []byte("PK\x03\x04"), "not a kscope bench result"},
		{"no version", []byte(`{"tool":"x"}`), "no version"},
		{"too large", make([]byte, MaxFileSize+1), "larger than"},
		{"series not an array", []byte(`{"version":1,"series":{}}`), "series is not an array"},
		{"too many seconds", []byte(`{"version":1,"series":[` + strings.Repeat("{},", MaxSeconds) + `{}]}`), "more than 1000000 seconds"},
		{"too many series in a second", []byte(`{"version":1,"series":[{"latency":{"a":{},"b":{},"c":{},"d":{},"e":{},"f":{},"g":{},"h":{},"i":{}}}]}`), "9 latency series"},
		{"histogram too long", []byte(`{"version":1,"latency":{"service":{"histogram":"` + strings.Repeat("A", MaxHistogramText+4) + `"}}}`), "bytes of base64"},
		{"wrong type", []byte(`{"version":1,"totals":{"sent":"many"}}`), "damaged result"},
	} {
		if _, err := Parse(tc.data); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("missing file: %v", err)
	}
	// A hand-made result without histograms is accepted.
	r, err := Parse([]byte(`{"version":1,"workload":{"duration_ms":1000},"latency":{"service":{"count":3,"p50_us":10,"max_us":12}},` +
		`"series":[{"t":0,"latency":{"service":{"count":3,"p50_us":10,"p99_us":12,"max_us":12}}}]}`))
	if err != nil || r.Latency[bench.LatencyService].P50Us != 10 {
		t.Errorf("minimal result: %v", err)
	}
}

func TestCountsLenMatchesLibrary(t *testing.T) {
	for _, g := range []struct {
		lo, hi int64
		digits int
	}{{1, 3_600_000_000, 3}, {1, 1000, 1}, {1000, 1 << 40, 2}, {1, math.MaxInt64, 5}, {7, 100_000, 4}, {1, 2, 0}} {
		h := hdrhistogram.New(g.lo, g.hi, max(g.digits, 1))
		want := int64(len(h.Export().Counts))
		got, err := countsLen(g.lo, g.hi, int32(max(g.digits, 1)))
		if err != nil || got != want {
			t.Errorf("%+v: countsLen %d (%v), library %d", g, got, err, want)
		}
	}
}

// FuzzLoad feeds the loader arbitrary files: it must return a result or an
// error, never panic, and what it accepts must compare and encode.
func FuzzLoad(f *testing.F) {
	good, _ := json.Marshal(small(1))
	f.Add(good)
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":1,"latency":{"service":{"count":1,"histogram":"` + hugeHistogram() + `"}}}`))
	f.Add([]byte(`{"version":1,"series":[{"msgs_per_sec":1e308,"latency":{"service":{"count":1,"p50_us":9223372036854775807}}}]}`))
	f.Add(bytes.Replace(good, []byte(`"p99_us":`), []byte(`"p99_us":1`), 1))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			return
		}
		c, err := Compare(r, r, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := json.Marshal(c); err != nil {
			t.Fatal(err)
		}
		if len(c.Regressions()) != 0 {
			t.Errorf("a run regressed against itself")
		}
	})
}

// TestLoadContradictions: a result whose per-second series is missing or
// contradicts its totals is refused, with the reason; the bounds leave
// every result bench can write alone (values acknowledged after the last
// second, a last half second).
func TestLoadContradictions(t *testing.T) {
	withValues := func(r *bench.Result, name string, values ...int64) *bench.Latency {
		h, err := DecodeHistogram(r.Latency[name].Histogram)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			h.RecordValue(v)
		}
		return comparetest.Latency(h)
	}
	slower := func() *bench.Result {
		return comparetest.Result(comparetest.Spec{Seed: 1, Seconds: 5, Rate: 100, Target: 100, RateNoise: 0.1, MedianUs: 1500 * 20, Sigma: 0.7, PerSecond: 50})
	}
	few := hdrhistogram.New(1, 3_600_000_000, 3)
	for range 10 {
		few.RecordValue(1500)
	}
	tests := []struct {
		name   string
		damage func(r *bench.Result)
		want   string // "" : accepted
	}{
		{"whole", func(r *bench.Result) {}, ""},
		{"values after the last second", func(r *bench.Result) {
			r.Latency[bench.LatencyService] = withValues(r, bench.LatencyService, 900_000, 900_000, 1_000_000)
		}, ""},
		{"a last half second", func(r *bench.Result) {
			r.Workload.DurationMs = 4500
			r.Series[4].MsgsPerSec *= 2
		}, ""},
		{"no series", func(r *bench.Result) { r.Series = nil }, "no per-second series for a run of 5000 ms"},
		{"no series and no duration", func(r *bench.Result) { r.Series, r.Workload.DurationMs = nil, 0 }, "no per-second series"},
		{"another duration", func(r *bench.Result) { r.Workload.DurationMs = 60_000 }, "the series has 5 seconds; workload.duration_ms 60000 makes 60"},
		{"seconds out of order", func(r *bench.Result) { r.Series[1].T = 3 }, "series[1].t is 3"},
		{"more acked in the seconds", func(r *bench.Result) { r.Totals.Acked = 10 }, "more than totals.acked 10"},
		{"more acked and failed than sent", func(r *bench.Result) { r.Totals.Failed = r.Totals.Sent }, "acked and"},
		{"more lost than acked", func(r *bench.Result) { r.Totals.Lost = r.Totals.Acked + 1 }, "lost of"},
		{"a second's rate", func(r *bench.Result) { r.Series[2].MsgsPerSec *= 3 }, "series[2]: msgs_per_sec"},
		{"the run's rate too high", func(r *bench.Result) { r.Totals.MsgsPerSec *= 10 }, "totals.msgs_per_sec"},
		{"the run's rate too low", func(r *bench.Result) { r.Totals.MsgsPerSec /= 10 }, "totals.msgs_per_sec"},
		{"the run's MB/s", func(r *bench.Result) { r.Totals.MBPerSec *= 10 }, "totals.mb_per_sec"},
		{"fewer values in the run", func(r *bench.Result) { r.Latency[bench.LatencyService] = comparetest.Latency(few) }, "the seconds hold 250 values, the run 10"},
		{"percentiles of another run", func(r *bench.Result) { r.Latency[bench.LatencyService] = slower().Latency[bench.LatencyService] }, "outside what the per-second histograms allow"},
		{"a series only in the seconds", func(r *bench.Result) {
			r.Series[0].Latency["extra"] = bench.SecondLatency{Count: 1, P50Us: 5, P99Us: 5, MaxUs: 5}
		}, "the series has latency.extra, the totals have not"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := small(1)
			tc.damage(r)
			p := write(t, r)
			_, err := Load(p)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), p+": ") || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v: want one line naming the file with %q", err, tc.want)
			}
		})
	}
}
