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

// maxKeyLogCopy bounds the key log record copies into the recording
// (read into memory): about 300 000 TLS 1.3 sessions.
const maxKeyLogCopy = 256 << 20

// readKeyLogCopy reads the key log record copies into the recording.
func readKeyLogCopy(path string) ([]byte, error) {
	return safefile.ReadAll(path, maxKeyLogCopy)
}
