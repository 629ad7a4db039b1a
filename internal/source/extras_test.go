package source

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestSkipExtrasOnCaptures: decoding the real captures with the extra
// fields skipped (wire.Config.Skip, what the agent does with its views
// off) gives the same requests minus exactly those fields, and the same
// counters, with the decoder's settings of kscope requests and of the
// agent's hot path.
func TestSkipExtrasOnCaptures(t *testing.T) {
	for _, c := range realCaptures {
		for _, settings := range decoderSettings {
			for _, skip := range []wire.Extras{wire.ProducerHeaders, wire.FetchExtent, wire.AllExtras} {
				t.Run(c.file+"/"+settings.name+"/"+skip.String(), func(t *testing.T) {
					cfg := wire.DefaultConfig()
					cfg.Ports = []uint16{c.port}
					cfg = settings.of(cfg)
					full, fres := readJSON(t, c.file, cfg, skip)
					cfg.Skip = skip
					skipped, sres := readJSON(t, c.file, cfg, 0)
					if fres.Wire != sres.Wire {
						t.Errorf("counters differ:\n%+v decoding everything\n%+v skipping %v", fres.Wire, sres.Wire, skip)
					}
					if len(full) != len(skipped) {
						t.Fatalf("%d requests decoding everything, %d skipping %v", len(full), len(skipped), skip)
					}
					for i := range full {
						if full[i].cleared != skipped[i].cleared {
							t.Fatalf("request %d skipping %v:\n got %s\nwant %s", i, skip, skipped[i].cleared, full[i].cleared)
						}
					}
					if changed, want := anyChanged(full), c.has&skip != 0; changed != want {
						t.Errorf("skipping %v changed a request: %v, want %v", skip, changed, want)
					}
				})
			}
		}
	}
}

// realCaptures are testdata/captures, each with its broker's port and the
// extras some request of it has.
var realCaptures = []struct {
	file string
	port uint16
	has  wire.Extras
}{
	{"produce-lz4-and-ids.pcapng", 9092, wire.ProducerHeaders},
	{"lost-first-responses.pcap", 37803, 0},
	{"lost-response-before-large-fetch.pcap", 35997, wire.FetchExtent},
	{"lost-inside-large-fetch.pcap", 45551, 0}, // its large fetch response is cut
}

// decoderSettings are the decoder's settings of kscope requests (as is)
// and of the agent's hot path.
var decoderSettings = []struct {
	name string
	of   func(wire.Config) wire.Config
}{
	{"requests", func(cfg wire.Config) wire.Config { return cfg }},
	{"agent", func(cfg wire.Config) wire.Config {
		cfg.ProduceIDsOnly, cfg.MessageIDsMinLatency = true, 100*time.Millisecond
		return cfg
	}},
}

// decodedJSON is a request as JSON, whole and with extra fields cleared.
type decodedJSON struct{ whole, cleared string }

func anyChanged(reqs []decodedJSON) bool {
	for _, r := range reqs {
		if r.whole != r.cleared {
			return true
		}
	}
	return false
}

// readJSON decodes a capture of testdata/captures with cfg, returning
// each request as JSON as it was emitted (the decoder may reuse what it
// emits), and with the fields of clear cleared.
func readJSON(t *testing.T, file string, cfg wire.Config, clear wire.Extras) ([]decodedJSON, Result) {
	t.Helper()
	var out []decodedJSON
	res, err := ReadFiles([]string{"../../testdata/captures/" + file}, Options{Wire: cfg}, func(r *event.Request) {
		out = append(out, decodedJSON{marshal(t, r), marshal(t, clearExtras(r, clear))})
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no requests on port %v", file, cfg.Ports)
	}
	return out, res
}

// clearExtras returns a copy of r without the fields of x.
func clearExtras(r *event.Request, x wire.Extras) *event.Request {
	c := *r
	c.Partitions = append([]event.Partition(nil), r.Partitions...)
	if x.Has(wire.ProducerHeaders) {
		c.Producer = event.Producer{TransactionalID: r.Producer.TransactionalID}
		for i := range c.Partitions {
			c.Partitions[i].Batches = 0
		}
	}
	if x.Has(wire.FetchExtent) {
		for i := range c.Partitions {
			p := &c.Partitions[i]
			p.FirstOffset, p.LastOffset, p.FirstTimestamp, p.MaxTimestamp = nil, nil, nil, nil
		}
	}
	return &c
}

func marshal(t *testing.T, r *event.Request) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
