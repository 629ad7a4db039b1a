package consumers

import (
	"fmt"

	"github.com/kscope-dev/kscope/internal/recording"
)

// ReadRequests adds every request of a requests JSON Lines file (a
// recording's requests.jsonl) to a, reading as rd says.
func ReadRequests(rd recording.Reader, path string, a *Aggregator) error {
	if err := rd.Requests(path, a.Add); err != nil {
		return fmt.Errorf("reading requests: %w", err)
	}
	return nil
}
