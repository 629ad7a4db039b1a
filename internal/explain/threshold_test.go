package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/recording"
)

func TestDecideThreshold(t *testing.T) {
	lats := make([]float64, 100) // 10, 20, ... 1000 ms
	for i := range lats {
		lats[i] = float64(i+1) * 10
	}
	slowLog := &recording.SlowLog{ThresholdMs: 42.5}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	tests := []struct {
		name    string
		cfg     Config
		slowLog *recording.SlowLog
		lats    []float64
		want    SlowThreshold
		warning string
	}{
		{"the default percentile", Config{}, nil, lats, SlowThreshold{ms(990), "p99"}, ""},
		{"a percentile", Config{Percentile: 50}, nil, lats, SlowThreshold{ms(500), "p50"}, ""},
		{"--slow", Config{Slow: ms(42)}, nil, lats, SlowThreshold{ms(42), "--slow"}, ""},
		{"no latencies", Config{}, nil, nil, SlowThreshold{0, "p99"}, ""},
		{"a slow log's threshold", Config{}, slowLog, lats, SlowThreshold{ms(42.5), SlowLogFrom}, ""},
		{"a defaulted percentile does not beat a slow log's", Config{Percentile: 99}, slowLog, lats, SlowThreshold{ms(42.5), SlowLogFrom}, ""},
		{"--slow beats a slow log's", Config{Slow: ms(200)}, slowLog, lats, SlowThreshold{ms(200), "--slow"}, ""},
		{"a percentile given beats a slow log's, with a warning", Config{Percentile: 90, PercentileGiven: true}, slowLog, lats,
			SlowThreshold{ms(900), "p90"}, "an agent slow-request log (requests of 42.5 ms and more only)"},
		{"a slow log that kept everything", Config{}, &recording.SlowLog{}, lats, SlowThreshold{ms(990), "p99"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, warning := DecideThreshold(tt.cfg, tt.slowLog, tt.lats)
			if got != tt.want || (warning == "") != (tt.warning == "") || !strings.Contains(warning, tt.warning) {
				t.Errorf("%+v, %q; want %+v, %q", got, warning, tt.want, tt.warning)
			}
		})
	}
}
