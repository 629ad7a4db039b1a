package cli

import (
	"fmt"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// checkFollowedKeyLog refuses, before anything starts, a key log that
// record cannot read more than once: it follows it for the capture's
// secrets blocks and copies it into the recording at the end, so a pipe,
// a FIFO or a device will not do.
func checkFollowedKeyLog(path string) error {
	if path == "" {
		return nil
	}
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return badInput(fmt.Errorf("--tls-keylog: record follows the key log and copies it into the recording: %w", err))
	}
	return in.Close()
}
