package clients

import (
	"fmt"

	"github.com/kscope-dev/kscope/internal/recording"
)

// ReadRequests adds every request of a requests JSON Lines file (a
// recording's requests.jsonl, or `kscope requests --format json` output)
// to a, reading as rd says: events whose times cannot be true are left
// out and counted in rd.Tally, as explain and report do.
func ReadRequests(rd recording.Reader, path string, a *Aggregator) error {
	if err := rd.Requests(path, a.Add); err != nil {
		return fmt.Errorf("reading requests: %w", err)
	}
	return nil
}
