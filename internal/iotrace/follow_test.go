package iotrace

import (
	"os/exec"
	"testing"
	"time"
)

// watchExit sees a process exit through the poller, and stop ends the
// wait without reporting an exit.
func TestWatchExit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stop   bool
		exited bool
	}{
		{"exits", false, true},
		{"stopped first", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("sleep", "0.3")
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Wait()
			done, stop, err := watchExit(cmd.Process.Pid)
			if err != nil {
				t.Fatal(err)
			}
			if tc.stop {
				stop()
			} else {
				defer stop()
			}
			select {
			case <-done:
				if !tc.exited {
					t.Error("an exit was reported after stop")
				}
			case <-time.After(2 * time.Second):
				if tc.exited {
					t.Error("the exit was not seen within 2 s")
				}
			}
		})
	}
}
