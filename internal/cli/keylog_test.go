package cli

import (
	"strings"
	"testing"
	"time"
)

// TestAgentKeyLogNotRegular: agent --tls-keys attach creates the key log
// the Java agent appends to; a FIFO or a device in its place is refused,
// not opened for writing (which blocks on a FIFO).
func TestAgentKeyLogNotRegular(t *testing.T) {
	dir := t.TempDir()
	// Not --pid auto: should the refusal fail, the Java agent must not
	// be loaded into a broker that happens to run here.
	pid := idleProcess(t)
	for _, target := range hostileOutputs(t, dir) {
		t.Run(target.name, func(t *testing.T) {
			before := stateOf(t, target.path, false)
			code, _, stderr := runWithin(t, 30*time.Second, "agent", "--pid", pid, "--listen", "127.0.0.1:0", "--duration", "1s",
				"--tls-keys", "attach", "--tls-keylog", target.path)
			if code != ExitBadInput || !strings.Contains(stderr, "--tls-keylog:") {
				t.Errorf("exit %d, want %d naming --tls-keylog: %q", code, ExitBadInput, stderr)
			}
			if after := stateOf(t, target.path, false); !sameState(after, before) {
				t.Errorf("%s changed", target.path)
			}
		})
	}
}
