package clients

import (
	"encoding/json"
	"fmt"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

// ReadRequests adds every request of a requests JSON Lines file (a
// recording's requests.jsonl, or `kscope requests --format json` output)
// to a, reading as rd says: events whose times cannot be true are left
// out and counted in rd.Tally, as explain and report do.
func ReadRequests(rd recording.Reader, path string, a *Aggregator) error {
	var r event.Request
	err := rd.Lines(path, func(line []byte, _ int64) error {
		r = event.Request{}
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		if !r.ClockStep {
			if err := rd.Window.CheckRequest(r.Arrival, r.End, r.LatencyMs, r.Answered); err != nil {
				return err
			}
		}
		a.Add(&r)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading requests: %w", err)
	}
	return nil
}
