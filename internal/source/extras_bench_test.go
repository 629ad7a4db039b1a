package source

import (
	"os"
	"strconv"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// BenchmarkDecodeExtras is what the decoder's extra fields cost the agent
// per request (wire.Config.Skip: what its views read), over a real
// capture: bench/agent-replay.sh's (KSCOPE_BENCH_CAPTURE, its broker port
// in KSCOPE_BENCH_PORT, default 19097), decoded with the agent's settings
// without the slow log. Each round reads the whole file: the difference
// between the sub-benchmarks is the extras' cost.
//
//	KSCOPE_BENCH_CAPTURE=/tmp/kscope-agentreplay/max-rate.pcap \
//	  go test -run '^$' -bench DecodeExtras -benchtime 3x -cpu 1 -benchmem ./internal/source/
func BenchmarkDecodeExtras(b *testing.B) {
	path := os.Getenv("KSCOPE_BENCH_CAPTURE")
	if path == "" {
		b.Skip("KSCOPE_BENCH_CAPTURE names no capture (bench/agent-replay.sh keeps one)")
	}
	port := 19097
	if p, err := strconv.Atoi(os.Getenv("KSCOPE_BENCH_PORT")); err == nil {
		port = p
	}
	for _, bc := range []struct {
		name string
		skip wire.Extras
	}{{"all", 0}, {"none", wire.AllExtras}, {"no-producer-headers", wire.ProducerHeaders}, {"no-fetch-extent", wire.FetchExtent}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := wire.DefaultConfig()
			cfg.Ports, cfg.ProduceIDsOnly, cfg.MessageIDHeader, cfg.Skip = []uint16{uint16(port)}, true, "", bc.skip
			var requests int64
			for b.Loop() {
				res, err := ReadFiles([]string{path}, Options{Wire: cfg}, func(*event.Request) {})
				if err != nil {
					b.Fatal(err)
				}
				requests += res.Wire.Requests
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/request")
		})
	}
}
