package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestViewsTakeLentEvents: every registered view reports the same after
// the real captures' requests were lent to it (the decoder reusing each
// event once Add returns, as in the agent) as after they were given to
// it: no view keeps an event, its partitions or a pointer into them.
func TestViewsTakeLentEvents(t *testing.T) {
	captures := []struct {
		file string
		port uint16
	}{
		{"produce-lz4-and-ids.pcapng", 9092},
		{"lost-first-responses.pcap", 37803},
		{"lost-response-before-large-fetch.pcap", 35997},
		{"lost-inside-large-fetch.pcap", 45551},
	}
	for name, spec := range registeredViews {
		for _, c := range captures {
			t.Run(name+"/"+c.file, func(t *testing.T) {
				report := func(recycle bool) string {
					v := spec.New(&Config{})
					var last time.Time
					cfg := wire.DefaultConfig()
					cfg.Ports, cfg.ProduceIDsOnly, cfg.Recycle = []uint16{c.port}, true, recycle
					_, err := source.ReadFiles([]string{"../../testdata/captures/" + c.file}, source.Options{Wire: cfg}, func(r *event.Request) {
						v.Add(r)
						for _, at := range []time.Time{r.Arrival, r.End} {
							if at.After(last) {
								last = at
							}
						}
					})
					if err != nil {
						t.Fatal(err)
					}
					b, err := json.Marshal(v.Report(last.Add(time.Second)))
					if err != nil {
						t.Fatal(err)
					}
					return string(b)
				}
				given, lent := report(false), report(true)
				if lent != given {
					t.Errorf("lent:\n%s\ngiven:\n%s", lent, given)
				}
			})
		}
	}
}
