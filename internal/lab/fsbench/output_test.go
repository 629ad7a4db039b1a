package fsbench

import (
	"bytes"
	"strings"
	"testing"
)

// TestTableEscapesWarnings: a warning carries paths and tools' errors
// (a --record path, a recorder's error) and is printed escaped: a
// terminal control sequence in one reaches the terminal as text.
func TestTableEscapesWarnings(t *testing.T) {
	cases := []struct {
		warning string
		raw     string // must not be in the table
	}{
		{"recording /tmp/\x1b[31mred: failed", "\x1b[31m"},
		{"line\nbreak", "line\nbreak"},
		{"bell\a", "\a"},
	}
	for _, c := range cases {
		res := fakeResult()
		res.Warnings = []string{c.warning}
		var tab bytes.Buffer
		if err := WriteTable(&tab, res); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(tab.String(), c.raw) {
			t.Errorf("%q printed raw", c.warning)
		}
		if !strings.Contains(tab.String(), "warning: ") {
			t.Errorf("%q not printed", c.warning)
		}
	}
}

// TestEnvironmentNamesTheDevice: with --device the environment line says
// the loop devices are the emulator's, with its profile and seed (a
// reader of the table would otherwise take the latencies for this
// machine's disk); without, it says they are plain images.
func TestEnvironmentNamesTheDevice(t *testing.T) {
	res := fakeResult()
	res.LoopDirectIO = true
	if env := res.Environment(); strings.Contains(env, "emulator") || !strings.Contains(env, "loop devices (direct I/O)") {
		t.Errorf("without a device: %q", env)
	}
	res.Device = &DeviceProfile{Name: "hdd-\x1bbusy", Seed: 7}
	env := res.Environment()
	for _, want := range []string{"slow-device emulator", "profile hdd-", "seed 7"} {
		if !strings.Contains(env, want) {
			t.Errorf("with a device: %q lacks %q", env, want)
		}
	}
	if strings.Contains(env, "\x1b") {
		t.Errorf("with a device: %q prints the profile's name raw", env)
	}
}
