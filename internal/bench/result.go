// Package bench is kscope's load generator: open-loop produce and consume
// load against a real cluster with franz-go, latencies in HdrHistograms
// (service time, coordinated-omission-corrected response time,
// end-to-end, and in sync mode the wait between the broker's
// acknowledgement and the application being told), exact accounting of
// every message, and a result file that runs can be compared with.
package bench

import (
	"encoding/json"
	"io"
	"time"
)

// ResultVersion is the version of the RESULT.json format.
const ResultVersion = 1

// The latency series of a result, in microseconds.
const (
	LatencyService   = "service"    // send (handed to the client) to acknowledgement
	LatencyResponse  = "response"   // intended send time to acknowledgement (coordinated-omission corrected)
	LatencyEndToEnd  = "end_to_end" // send timestamp header to consumption, same host
	LatencySyncWait  = "sync_wait"  // --sync: broker acknowledgement reaching the client to the application being told
	LatencyBrokerRTT = "broker_rtt" // --sync: produce request written to response read (kgo hooks)
)

// Result is RESULT.json: what was run, where, and what was measured.
type Result struct {
	Version int       `json:"version"`
	Tool    string    `json:"tool"` // "kscope bench run"
	Start   time.Time `json:"start"`
	End     time.Time `json:"end"`
	// Interrupted: the run was ended early (Ctrl-C); what it measured
	// until then is valid.
	Interrupted bool `json:"interrupted"`

	Workload    Workload     `json:"workload"`
	Client      ClientConfig `json:"client"`
	Environment Environment  `json:"environment"`

	Totals Totals `json:"totals"`
	// Latency per series (the Latency* names), over the measured part of
	// the run (after the warm-up).
	Latency map[string]*Latency `json:"latency"`
	// Series has one entry per second of the measured part.
	Series []Second `json:"series"`
}

// Workload is what load was offered.
type Workload struct {
	Topics            []string `json:"topics"`
	Partitions        int32    `json:"partitions"`
	ReplicationFactor int16    `json:"replication_factor"`
	Producers         int      `json:"producers"`
	Consumers         int      `json:"consumers"`
	// Rate is the target in messages per second over all producers; 0
	// with RateMax.
	Rate    float64 `json:"rate"`
	RateMax bool    `json:"rate_max"`
	Sync    bool    `json:"sync"`
	// DurationMs and WarmupMs are the measured and warm-up parts.
	DurationMs int64 `json:"duration_ms"`
	WarmupMs   int64 `json:"warmup_ms"`
	// MessageSize is the size spec as given ("1024", "uniform:100-2000", ...).
	MessageSize string `json:"message_size"`
	// Keys: none, round-robin, uniform, hot:<fraction> (skew).
	Keys string `json:"keys"`
	// Compressibility is the fraction of each payload that is not random.
	Compressibility float64 `json:"compressibility"`
	Headers         int     `json:"headers"`
}

// ClientConfig is the producer configuration.
type ClientConfig struct {
	Acks        string  `json:"acks"` // all, 1, 0
	Compression string  `json:"compression"`
	LingerMs    float64 `json:"linger_ms"`
	BatchBytes  int     `json:"batch_bytes"`
	MaxInFlight int     `json:"max_in_flight"`
	Idempotent  bool    `json:"idempotent"`
	Library     string  `json:"library"` // "franz-go vX.Y.Z"
}

// Environment is where the run happened.
type Environment struct {
	Host          string   `json:"host"`
	Kernel        string   `json:"kernel"`
	CPU           string   `json:"cpu"`
	CPUs          int      `json:"cpus"`
	Bootstrap     []string `json:"bootstrap"`
	BrokerVersion string   `json:"broker_version,omitempty"`
	// LogDirFS is the file system and mount options of the broker's log
	// dirs, when the broker runs on this host.
	LogDirFS string `json:"log_dir_fs,omitempty"`
}

// Totals is the exact accounting of the measured part (and the warm-up's
// messages, which are accounted too but not timed).
type Totals struct {
	Sent       int64 `json:"sent"`
	Acked      int64 `json:"acked"`
	Failed     int64 `json:"failed"` // produce errors
	Consumed   int64 `json:"consumed"`
	Lost       int64 `json:"lost"`       // acknowledged, never consumed
	Duplicated int64 `json:"duplicated"` // consumed more than once
	Bytes      int64 `json:"bytes"`      // acknowledged payload bytes
	// Achieved rates over the measured part.
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
	// Requests the clients (producers and consumers) wrote in the
	// measured part, by API, and their rate: batching decides how many
	// requests a message rate makes.
	Requests       map[string]int64 `json:"requests,omitempty"`
	RequestsPerSec float64          `json:"requests_per_sec,omitempty"`
	// ClientCPUSeconds is user+system CPU of the bench process; per
	// message in ClientCPUPerMsgUs.
	ClientCPUSeconds  float64 `json:"client_cpu_seconds"`
	ClientCPUPerMsgUs float64 `json:"client_cpu_per_msg_us"`

	// Added by the engine (issue 6): ConsumedUnacked is messages consumed
	// but never acknowledged (the produce failed or was unanswered, yet
	// the message was written): neither lost nor duplicated. Foreign is
	// records in the topics without this run's message id (earlier runs,
	// other producers), ignored.
	ConsumedUnacked int64 `json:"consumed_unacked"`
	Foreign         int64 `json:"foreign"`
}

// Latency is one latency series: percentiles in microseconds and the
// whole histogram, in HdrHistogram's standard compressed base64 form.
type Latency struct {
	Count     int64   `json:"count"`
	MeanUs    float64 `json:"mean_us"`
	P50Us     int64   `json:"p50_us"`
	P90Us     int64   `json:"p90_us"`
	P99Us     int64   `json:"p99_us"`
	P999Us    int64   `json:"p999_us"`
	P9999Us   int64   `json:"p9999_us"`
	MaxUs     int64   `json:"max_us"`
	Histogram string  `json:"histogram"`
}

// Second is one second of the measured part.
type Second struct {
	T          int     `json:"t"` // seconds since the measured part began
	Sent       int64   `json:"sent"`
	Acked      int64   `json:"acked"`
	Consumed   int64   `json:"consumed"`
	Errors     int64   `json:"errors"`
	MsgsPerSec float64 `json:"msgs_per_sec"` // acknowledged
	MBPerSec   float64 `json:"mb_per_sec"`
	// Percentiles of this second's latencies per series (microseconds):
	// the samples compare's tests work on.
	Latency map[string]SecondLatency `json:"latency"`
}

// SecondLatency is one second's percentiles of one series, and its
// histogram (2 significant digits, compressed base64 like Latency's):
// compare counts each second's requests above its thresholds and
// resamples seconds from it. Results written before it was added lack
// it.
type SecondLatency struct {
	Count     int64  `json:"count"`
	P50Us     int64  `json:"p50_us"`
	P99Us     int64  `json:"p99_us"`
	MaxUs     int64  `json:"max_us"`
	Histogram string `json:"histogram,omitempty"`
}

// WriteResult writes r as RESULT.json: indented JSON, the form `bench
// compare` and `bench report` read.
func WriteResult(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}
