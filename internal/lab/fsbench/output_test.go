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
