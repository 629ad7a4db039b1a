// Package comparetest builds synthetic bench results from known
// distributions with a seeded random number generator, for the tests of
// compare, benchout and the CLI.
package comparetest

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench"
)

// Spec describes a synthetic run.
type Spec struct {
	Seed    uint64
	Seconds int
	// Rate is the mean acknowledged msgs/s; each second's rate is normal
	// with relative standard deviation RateNoise. Target is the
	// workload's rate (default Rate).
	Rate      float64
	Target    float64
	RateNoise float64
	MsgBytes  int // default 1024
	// Latency of every message is log-normal: median MedianUs, shape
	// Sigma (p99 = median·e^(2.326·Sigma)).
	MedianUs float64
	Sigma    float64
	// PerSecond latency samples are drawn per second (default 200).
	PerSecond int
	// Series names the latency series (default service and response,
	// which get the same distribution).
	Series []string
	// Stalls stop the broker: in its second, the share Ms/1000 of the
	// samples waited for the stall's end (uniform from 0 to Ms, on top of
	// their latency), as the requests sent during a stall do.
	Stalls []Stall
	// Workload and Client override the defaults when set.
	Workload *bench.Workload
	Client   *bench.ClientConfig
}

// Stall is a broker stall of Ms milliseconds in second Second.
type Stall struct {
	Second int
	Ms     float64
}

// Result builds a synthetic result: per-second series, and percentiles
// and histograms of the whole run exactly as a writer would compute them.
func Result(s Spec) *bench.Result {
	if s.MsgBytes == 0 {
		s.MsgBytes = 1024
	}
	if s.Target == 0 {
		s.Target = s.Rate
	}
	if s.PerSecond == 0 {
		s.PerSecond = 200
	}
	if len(s.Series) == 0 {
		s.Series = []string{bench.LatencyService, bench.LatencyResponse}
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x6b73636f7065))
	start := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	r := &bench.Result{
		Version: bench.ResultVersion, Tool: "kscope bench run",
		Start: start, End: start.Add(time.Duration(s.Seconds) * time.Second),
		Workload: bench.Workload{Topics: []string{"bench"}, Partitions: 6, ReplicationFactor: 1, Producers: 1, Consumers: 1,
			Rate: s.Target, DurationMs: int64(s.Seconds) * 1000, WarmupMs: 5000, MessageSize: "1024", Keys: "none", Compressibility: 0.5},
		Client:      bench.ClientConfig{Acks: "all", Compression: "none", LingerMs: 5, BatchBytes: 1 << 20, MaxInFlight: 5, Idempotent: true, Library: "franz-go v1.22.2"},
		Environment: bench.Environment{Host: "test", Kernel: "6.1.0", CPU: "test cpu", CPUs: 8, Bootstrap: []string{"127.0.0.1:9092"}, BrokerVersion: "4.1.2"},
		Latency:     map[string]*bench.Latency{},
	}
	if s.Workload != nil {
		r.Workload = *s.Workload
	}
	if s.Client != nil {
		r.Client = *s.Client
	}
	hists := make([]*hdrhistogram.Histogram, len(s.Series))
	for i := range hists {
		hists[i] = hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 3)
	}
	var acked int64
	sample := make([]int64, s.PerSecond)
	for t := range s.Seconds {
		rate := max(0, s.Rate*(1+s.RateNoise*rng.NormFloat64()))
		n := int64(math.Round(rate))
		sec := bench.Second{T: t, Sent: n, Acked: n, Consumed: n, MsgsPerSec: float64(n),
			MBPerSec: float64(n) * float64(s.MsgBytes) / 1e6, Latency: map[string]bench.SecondLatency{}}
		acked += n
		stallMs := 0.0
		for _, st := range s.Stalls {
			if st.Second == t {
				stallMs += st.Ms
			}
		}
		for i, name := range s.Series {
			secHist := hdrhistogram.New(1, int64(time.Hour/time.Microsecond), 2)
			for j := range sample {
				v := s.MedianUs * math.Exp(s.Sigma*rng.NormFloat64())
				if stallMs > 0 && rng.Float64() < stallMs/1000 {
					v += rng.Float64() * stallMs * 1000
				}
				sample[j] = min(max(int64(math.Round(v)), 1), int64(time.Hour/time.Microsecond))
				hists[i].RecordValue(sample[j])
				secHist.RecordValue(sample[j])
			}
			slices.Sort(sample)
			enc, err := secHist.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
			if err != nil {
				panic(err)
			}
			sec.Latency[name] = bench.SecondLatency{Count: int64(len(sample)), P50Us: sample[len(sample)/2],
				P99Us: sample[len(sample)*99/100], MaxUs: sample[len(sample)-1], Histogram: string(enc)}
		}
		r.Series = append(r.Series, sec)
	}
	secs := float64(max(s.Seconds, 1))
	r.Totals = bench.Totals{Sent: acked, Acked: acked, Consumed: acked, Bytes: acked * int64(s.MsgBytes),
		MsgsPerSec: float64(acked) / secs, MBPerSec: float64(acked) * float64(s.MsgBytes) / 1e6 / secs,
		ClientCPUSeconds: float64(acked) * 2e-6, ClientCPUPerMsgUs: 2}
	for i, name := range s.Series {
		r.Latency[name] = Latency(hists[i])
	}
	return r
}

// Latency is what a writer stores for a histogram.
func Latency(h *hdrhistogram.Histogram) *bench.Latency {
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		panic(err)
	}
	return &bench.Latency{Count: h.TotalCount(), MeanUs: h.Mean(),
		P50Us: h.ValueAtQuantile(50), P90Us: h.ValueAtQuantile(90), P99Us: h.ValueAtQuantile(99),
		P999Us: h.ValueAtQuantile(99.9), P9999Us: h.ValueAtQuantile(99.99), MaxUs: h.Max(),
		Histogram: string(enc)}
}
