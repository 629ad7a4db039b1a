package source

import (
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestRecycleOnCaptures: decoding the real captures with the events lent
// (wire.Config.Recycle, the agent's setting) emits the same requests, as
// each is when emitted, and the same counters as with the events given,
// with the decoder's settings of kscope requests and of the agent; and the
// events are reused (a test that recycled nothing would pass vacuously).
func TestRecycleOnCaptures(t *testing.T) {
	for _, c := range realCaptures {
		for _, settings := range decoderSettings {
			t.Run(c.file+"/"+settings.name, func(t *testing.T) {
				cfg := wire.DefaultConfig()
				cfg.Ports = []uint16{c.port}
				cfg = settings.of(cfg)
				given, gres := readJSON(t, c.file, cfg, 0)
				cfg.Recycle = true
				lent, lres := readJSON(t, c.file, cfg, 0)
				if gres.Wire != lres.Wire {
					t.Errorf("counters differ:\n%+v events given\n%+v events lent", gres.Wire, lres.Wire)
				}
				if len(given) != len(lent) {
					t.Fatalf("%d requests with the events given, %d lent", len(given), len(lent))
				}
				for i := range given {
					if given[i].whole != lent[i].whole {
						t.Fatalf("request %d lent:\n got %s\nwant %s", i, lent[i].whole, given[i].whole)
					}
				}
				seen := map[*event.Request]bool{}
				if _, err := ReadFiles([]string{"../../testdata/captures/" + c.file}, Options{Wire: cfg}, func(r *event.Request) { seen[r] = true }); err != nil {
					t.Fatal(err)
				}
				if len(seen) >= len(lent) {
					t.Errorf("%d events for %d requests: none reused", len(seen), len(lent))
				}
			})
		}
	}
}

// TestRecycleAllocations: lending the events saves more than the event per
// request (its partitions' array too, where it has partitions), counted by
// the allocator (not timed) over a real capture of produce requests
// decoded with the agent's settings. Its first requests find nothing to
// reuse yet, and some have no partitions (ApiVersions, Metadata).
func TestRecycleAllocations(t *testing.T) {
	pkts := loadPackets(t, "../../testdata/captures/produce-lz4-and-ids.pcapng", 1<<30)
	cfg := wire.DefaultConfig()
	cfg.Ports, cfg.ProduceIDsOnly, cfg.MessageIDHeader = []uint16{9092}, true, ""
	perRequest := func(recycle bool) (allocs float64, requests int64) {
		cfg.Recycle = recycle
		allocs = testing.AllocsPerRun(3, func() { requests = decodePackets(pkts, cfg) })
		return allocs / float64(requests), requests
	}
	given, n := perRequest(false)
	lent, _ := perRequest(true)
	t.Logf("%d requests: %.2f allocations a request with the events given, %.2f lent", n, given, lent)
	if lent > given-1 {
		t.Errorf("lending the events saves %.2f allocations a request, want more than 1 (the event and its partitions)", given-lent)
	}
}
