package explain

import (
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/kscope-dev/kscope/internal/recording"
)

// SlowLogFrom names the slow threshold when it is an agent slow log's.
const SlowLogFrom = "agent slow log"

// SlowThreshold is the latency at or above which a produce request is
// slow, and where that came from.
type SlowThreshold struct {
	Latency time.Duration
	// From is "--slow", "p" and the percentile ("p99") of the recording's
	// produce latencies, or SlowLogFrom.
	From string
}

// DecideThreshold is where kscope decides what makes a produce request
// slow, for explain and report alike:
//
//   - cfg.Slow (--slow), when given;
//   - else, for an agent's slow-request log (slowLog, from its meta.json,
//     with a threshold), the agent's own threshold: a percentile of a file
//     that holds only slow requests ranks those, not the broker's
//     requests. A percentile the user gave (cfg.PercentileGiven) is still
//     honoured, with a warning;
//   - else cfg.Percentile of latencies (milliseconds, nearest rank); 0
//     without any.
//
// warning is "" unless the choice is doubtful.
func DecideThreshold(cfg Config, slowLog *recording.SlowLog, latencies []float64) (th SlowThreshold, warning string) {
	cfg.defaults()
	if cfg.Slow > 0 {
		return SlowThreshold{cfg.Slow, "--slow"}, ""
	}
	// A slow log without a threshold kept every request: its percentiles
	// are the broker's.
	if slowLog != nil && slowLog.ThresholdMs > 0 {
		if !cfg.PercentileGiven {
			return SlowThreshold{time.Duration(slowLog.ThresholdMs * float64(time.Millisecond)), SlowLogFrom}, ""
		}
		warning = "an agent slow-request log (requests of " + strconv.FormatFloat(slowLog.ThresholdMs, 'f', -1, 64) +
			" ms and more only): the percentile ranks those, not all of the broker's requests"
	}
	return SlowThreshold{percentile(latencies, cfg.Percentile), "p" + strconv.FormatFloat(cfg.Percentile, 'f', -1, 64)}, warning
}

// Threshold is cfg.Slow, or cfg.Percentile of latencies (milliseconds,
// nearest rank), with where it came from ("--slow" or "p99"): what
// DecideThreshold decides of a recording that is not a slow log.
func Threshold(cfg Config, latencies []float64) (time.Duration, string) {
	th, _ := DecideThreshold(cfg, nil, latencies)
	return th.Latency, th.From
}

// percentile is the p-th percentile of latencies (milliseconds), by
// nearest rank; 0 without any.
func percentile(latencies []float64, p float64) time.Duration {
	if len(latencies) == 0 {
		return 0
	}
	sorted := slices.Clone(latencies)
	slices.Sort(sorted)
	rank := int(math.Ceil(p*float64(len(sorted))/100 - 1e-9))
	rank = min(max(rank, 1), len(sorted))
	return time.Duration(sorted[rank-1] * float64(time.Millisecond))
}
