package iotrace

import (
	"os/exec"
	"reflect"
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

// TestAddStats: every field of Stats is added up (AddStats walks them,
// so a field that is not a count would panic here first).
func TestAddStats(t *testing.T) {
	var one Stats
	v := reflect.ValueOf(&one).Elem()
	for i := range v.NumField() {
		v.Field(i).SetUint(uint64(i + 1))
	}
	var sum Stats
	AddStats(&sum, one)
	AddStats(&sum, one)
	s := reflect.ValueOf(sum)
	for i := range s.NumField() {
		if got := s.Field(i).Uint(); got != 2*uint64(i+1) {
			t.Errorf("%s: %d, want %d", s.Type().Field(i).Name, got, 2*(i+1))
		}
	}
}
