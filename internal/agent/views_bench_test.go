package agent

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
	"unique"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/wire"
)

// BenchmarkViews is the agent's cost per request of each view it feeds
// every decoded request to (onRequest), over the requests of a real
// capture: bench/agent-replay.sh's (KSCOPE_BENCH_CAPTURE, its broker port
// in KSCOPE_BENCH_PORT, default 19097). The requests are decoded once,
// before the timing; each round feeds all of them to a new view. A
// synthetic stream misses what a real one has (several producers and
// partitions per request, a consumer's deliveries interleaved), which is
// where the views' cost was.
//
//	KSCOPE_BENCH_CAPTURE=/tmp/kscope-agentreplay/max-rate.pcap \
//	  go test -run '^$' -bench Views -benchtime 10x ./internal/agent/
func BenchmarkViews(b *testing.B) {
	path := os.Getenv("KSCOPE_BENCH_CAPTURE")
	if path == "" {
		b.Skip("KSCOPE_BENCH_CAPTURE names no capture (bench/agent-replay.sh keeps one)")
	}
	port := 19097
	if p, err := strconv.Atoi(os.Getenv("KSCOPE_BENCH_PORT")); err == nil {
		port = p
	}
	reqs := decodeCapture(b, path, uint16(port))
	for _, v := range []struct {
		name string
		add  func() func(*event.Request)
	}{
		{"clients", func() func(*event.Request) { return clients.NewLive(clients.Options{}, 0).Add }},
		{"consumers", func() func(*event.Request) { return consumers.NewLive(consumers.Options{}, 0).Add }},
	} {
		b.Run(v.name, func(b *testing.B) {
			for b.Loop() {
				add := v.add()
				for _, r := range reqs {
					add(r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
		})
		// The agent feeds the request it has just decoded, in the cache:
		// each request is read first (warm, timed alone in warm-only),
		// so that the view's own work is what the difference shows.
		b.Run(v.name+"-hot", func(b *testing.B) {
			sink := 0
			for b.Loop() {
				add := v.add()
				for _, r := range reqs {
					sink += warm(r)
					add(r)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
			warmSink = sink
		})
	}
	b.Run("warm-only", func(b *testing.B) {
		sink := 0
		for b.Loop() {
			for _, r := range reqs {
				sink += warm(r)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(reqs)), "ns/request")
		warmSink = sink
	})
}

// warmSink, warmRequest and warmPartition keep warm's reads from being
// optimised away.
var (
	warmSink      int
	warmRequest   event.Request
	warmPartition event.Partition
)

// warm reads r whole (its partitions and the values they point to),
// bringing it into the cache as the decoder leaves it.
func warm(r *event.Request) int {
	warmRequest = *r
	n := 0
	for _, v := range []*int16{r.Acks, r.ErrorCode} {
		if v != nil {
			n += int(*v)
		}
	}
	if r.ReplicaID != nil {
		n += int(*r.ReplicaID)
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		warmPartition = *p
		for _, v := range []*int64{p.BaseOffset, p.FetchOffset, p.HighWatermark, p.FirstOffset, p.LastOffset, p.FirstTimestamp, p.MaxTimestamp, p.LogStartOffset} {
			if v != nil {
				n += int(*v)
			}
		}
	}
	return n
}

// decodeCapture decodes every request of a capture, each a copy of its
// own (the decoder may reuse what it emits).
func decodeCapture(b *testing.B, path string, port uint16) []*event.Request {
	b.Helper()
	var reqs []*event.Request
	_, err := source.ReadFiles([]string{path}, source.Options{Wire: wire.Config{Ports: []uint16{port}}}, func(r *event.Request) {
		raw, err := json.Marshal(r)
		if err != nil {
			b.Fatal(err)
		}
		c := new(event.Request)
		if err := json.Unmarshal(raw, c); err != nil {
			b.Fatal(err)
		}
		c.Conn = r.Conn // not recorded: the decoder's hint
		intern(c)
		reqs = append(reqs, c)
	})
	if err != nil {
		b.Fatal(err)
	}
	if len(reqs) == 0 {
		b.Fatalf("%s: no request on port %d", path, port)
	}
	return reqs
}

// intern makes r's strings the one copy of each, as the decoder gives
// them (one string per connection, topic, client id, software): the
// views compare them by pointer first, which strings decoded from JSON
// each on its own would not let them.
func intern(r *event.Request) {
	for _, s := range []*string{&r.Client, &r.Broker, &r.API, &r.ClientID, &r.Principal, &r.SASLMechanism,
		&r.SoftwareName, &r.SoftwareVersion, &r.Producer.Codec, &r.Producer.TransactionalID, &r.Group.ID, &r.Group.MemberID} {
		*s = unique.Make(*s).Value()
	}
	for i := range r.Partitions {
		r.Partitions[i].Topic = unique.Make(r.Partitions[i].Topic).Value()
	}
}
