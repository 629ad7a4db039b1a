package bench

import (
	"errors"
	"testing"
	"time"
)

// Histograms survive the result's encoding exactly, and decoded ones can
// be merged (how runs are combined).
func TestHistogramEncodingRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		values []int64
	}{
		{"empty", nil},
		{"one value", []int64{1234}},
		{"range", []int64{0, 1, 2, 999, 1000, 1001, 65_000, 1_000_000, histMaxUs}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHist()
			for _, v := range tt.values {
				if err := h.RecordValue(v); err != nil {
					t.Fatal(err)
				}
			}
			l, err := latencyOf(h)
			if err != nil {
				t.Fatal(err)
			}
			back, err := DecodeHistogram(l.Histogram)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Equals(h) {
				t.Errorf("decoded histogram differs")
			}
			if back.TotalCount() != int64(len(tt.values)) || l.Count != int64(len(tt.values)) {
				t.Errorf("count %d / %d, want %d", back.TotalCount(), l.Count, len(tt.values))
			}
			merged := newHist()
			merged.Merge(back)
			merged.Merge(back)
			if merged.TotalCount() != 2*int64(len(tt.values)) || merged.Max() != back.Max() {
				t.Errorf("merge: count %d max %d", merged.TotalCount(), merged.Max())
			}
		})
	}
	if _, err := DecodeHistogram("not a histogram"); err == nil {
		t.Error("garbage decoded")
	}
}

func TestLatencyPercentiles(t *testing.T) {
	h := newHist()
	for v := int64(1); v <= 10000; v++ {
		h.RecordValue(v)
	}
	l, err := latencyOf(h)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{{"p50", l.P50Us, 5000}, {"p90", l.P90Us, 9000}, {"p99", l.P99Us, 9900}, {"p99.9", l.P999Us, 9990}, {"p99.99", l.P9999Us, 9999}, {"max", l.MaxUs, 10000}} {
		if d := c.got - c.want; d < -c.want/500 || d > c.want/500+1 {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if l.MeanUs < 4990 || l.MeanUs > 5010 {
		t.Errorf("mean %.1f", l.MeanUs)
	}
}

func TestUs(t *testing.T) {
	for _, c := range []struct{ ns, want int64 }{{-5000, 0}, {999, 0}, {1000, 1}, {1_500_000, 1500}, {1 << 62, histMaxUs}} {
		if got := us(c.ns); got != c.want {
			t.Errorf("us(%d) = %d, want %d", c.ns, got, c.want)
		}
	}
}

// Recorders hand each second to the shared table as their events move on,
// including events that arrive out of order, and series() turns the table
// into the result's per-second entries.
func TestRecorderSeconds(t *testing.T) {
	const start = int64(100e9)
	secs := newSeconds()
	a := newRecorder(start, secs, sService)
	b := newRecorder(start, secs, sService)
	sec := func(s float64) int64 { return start + int64(s*1e9) }

	// Before the measured part: nothing per second.
	if a.at(sec(-0.5)) != nil {
		t.Error("warm-up event got a second")
	}
	for _, e := range []struct {
		r  *recorder
		t  int64
		us int64
	}{
		{a, sec(0.1), 100}, {a, sec(0.9), 300}, {b, sec(0.5), 200},
		{a, sec(1.2), 1000}, {b, sec(2.5), 5000},
		{a, sec(0.95), 400}, // late: second 0 again, after a moved on
	} {
		e.r.latency(sService, e.t, e.us*1000)
		e.r.at(e.t).acked++
	}
	a.flush()
	b.flush()
	if got := secs.keys(); len(got) != 3 {
		t.Fatalf("seconds %v, want 0, 1, 2", got)
	}
	out, err := secs.series(3, 5e8)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 3 {
		t.Fatalf("%d seconds", len(out))
	}
	if out[0].Acked != 4 || out[1].Acked != 1 || out[2].Acked != 1 {
		t.Errorf("acked per second %d %d %d, want 4 1 1", out[0].Acked, out[1].Acked, out[2].Acked)
	}
	if l := out[0].Latency[LatencyService]; l.Count != 4 || l.MaxUs < 399 || l.MaxUs > 401 {
		t.Errorf("second 0 latency %+v", l)
	} else if h, err := DecodeHistogram(l.Histogram); err != nil {
		t.Errorf("second 0 histogram: %v", err)
	} else if h.TotalCount() != 4 {
		t.Errorf("second 0 histogram holds %d values, want 4", h.TotalCount())
	}
	if out[2].MsgsPerSec != 2 {
		t.Errorf("last (half) second: %.1f msg/s, want 2", out[2].MsgsPerSec)
	}
	if a.total[sService].TotalCount() != 4 || b.total[sService].TotalCount() != 2 {
		t.Errorf("run totals %d and %d", a.total[sService].TotalCount(), b.total[sService].TotalCount())
	}
}

func TestValidate(t *testing.T) {
	ok := Config{Bootstrap: []string{"x:1"}, Topics: []string{"t"}, Producers: 1, Rate: 10, Duration: time.Second}
	tests := []struct {
		name string
		edit func(c *Config)
	}{
		{"no bootstrap", func(c *Config) { c.Bootstrap = nil }},
		{"no topic", func(c *Config) { c.Topics = nil }},
		{"bad topic name", func(c *Config) { c.Topics = []string{"a/b"} }},
		{"topic twice", func(c *Config) { c.Topics = []string{"a", "a"} }},
		{"no producers", func(c *Config) { c.Producers = 0 }},
		{"negative consumers", func(c *Config) { c.Consumers = -1 }},
		{"no rate", func(c *Config) { c.Rate = 0 }},
		{"rate and max", func(c *Config) { c.RateMax = true }},
		{"no duration", func(c *Config) { c.Duration = 0 }},
		{"negative warm-up", func(c *Config) { c.Warmup = -time.Second }},
		{"bad size", func(c *Config) { c.MessageSize = "big" }},
		{"bad keys", func(c *Config) { c.Keys = "hot:2" }},
		{"compressibility above 1", func(c *Config) { c.Compressibility = 1.5 }},
		{"bad acks", func(c *Config) { c.Acks = "2" }},
		{"bad compression", func(c *Config) { c.Compression = "brotli" }},
		{"idempotent with acks 1", func(c *Config) { c.Idempotent, c.Acks = true, "1" }},
		{"idempotent with 6 in flight", func(c *Config) { c.Idempotent, c.MaxInFlight = true, 6 }},
		{"tiny batches", func(c *Config) { c.BatchBytes = 10 }},
		{"negative linger", func(c *Config) { c.Linger = -1 }},
	}
	if _, err := ok.validate(); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	for _, tt := range tests {
		c := ok
		c.Topics = append([]string(nil), ok.Topics...)
		tt.edit(&c)
		_, err := c.validate()
		var ie *InputError
		if !errors.As(err, &ie) {
			t.Errorf("%s: err = %v, want an InputError", tt.name, err)
		}
	}
}
