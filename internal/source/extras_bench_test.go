package source

import (
	"errors"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/wire"
)

// BenchmarkDecodeExtras is what the decoder's extra fields cost the agent
// per request (wire.Config.Skip: what its views read), with the events
// given or lent (-lent, wire.Config.Recycle, as the agent does), over a real
// capture: bench/agent-replay.sh's (KSCOPE_BENCH_CAPTURE, its broker port
// in KSCOPE_BENCH_PORT, default 19097), its first KSCOPE_BENCH_MB
// megabytes (default 256) held in memory and decoded with the agent's
// settings without the slow log, from link layer to requests.
//
//	KSCOPE_BENCH_CAPTURE=/tmp/kscope-agentreplay/max-rate.pcap \
//	  go test -run '^$' -bench DecodeExtras -benchtime 10x -cpu 1 -benchmem ./internal/source/
func BenchmarkDecodeExtras(b *testing.B) {
	path := os.Getenv("KSCOPE_BENCH_CAPTURE")
	if path == "" {
		b.Skip("KSCOPE_BENCH_CAPTURE names no capture (bench/agent-replay.sh keeps one)")
	}
	port := 19097
	if p, err := strconv.Atoi(os.Getenv("KSCOPE_BENCH_PORT")); err == nil {
		port = p
	}
	mb := 256
	if m, err := strconv.Atoi(os.Getenv("KSCOPE_BENCH_MB")); err == nil && m > 0 {
		mb = m
	}
	pkts := loadPackets(b, path, int64(mb)<<20)
	for _, bc := range []struct {
		name    string
		skip    wire.Extras
		recycle bool
	}{{"all", 0, false}, {"all-lent", 0, true}, {"none", wire.AllExtras, false}, {"none-lent", wire.AllExtras, true},
		{"no-producer-headers", wire.ProducerHeaders, false}, {"no-fetch-extent", wire.FetchExtent, false}} {
		b.Run(bc.name, func(b *testing.B) {
			cfg := wire.DefaultConfig()
			cfg.Ports, cfg.ProduceIDsOnly, cfg.MessageIDHeader, cfg.Skip = []uint16{uint16(port)}, true, "", bc.skip
			cfg.Recycle = bc.recycle // the agent lends its events
			var requests int64
			for b.Loop() {
				requests += decodePackets(pkts, cfg)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/request")
		})
	}
}

// packet is one captured packet held in memory.
type packet struct {
	data []byte
	ci   gopacket.CaptureInfo
	link layers.LinkType
}

// loadPackets reads a capture's packets up to about limit bytes.
func loadPackets(b testing.TB, path string, limit int64) []packet {
	b.Helper()
	f, err := capture.OpenFile(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	var pkts []packet
	for size := int64(0); size < limit; {
		data, ci, link, err := f.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		pkts = append(pkts, packet{append([]byte(nil), data...), ci, link})
		size += int64(len(data))
	}
	return pkts
}

// decodePackets decodes the packets with cfg and returns the requests.
func decodePackets(pkts []packet, cfg wire.Config) int64 {
	dec := wire.NewDecoder(cfg, &records.Decoder{}, nil, func(*event.Request) {})
	seg := capture.NewDecoder()
	for _, p := range pkts {
		if s, ok := seg.Decode(p.data, p.link); ok {
			dec.Packet(s, p.ci)
		}
	}
	dec.Close()
	return dec.Stats().Requests
}
