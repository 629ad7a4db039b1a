package use

import (
	"strings"
	"testing"
)

// TestWriteTableEscapesNames: interface and device names are the host's
// (an interface may be named with any byte but '/', ':' and spaces) and
// reach the terminal escaped.
func TestWriteTableEscapesNames(t *testing.T) {
	const hostile = "ev\x1b[31mil\r"
	s := &Sample{Disks: []Disk{{Name: hostile}}, NICs: []NIC{{Name: hostile}}, Notes: []string{"note on " + hostile}}
	var b strings.Builder
	if err := WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsAny(b.String(), "\x1b\r") || strings.Count(b.String(), `ev\x1b[31mil\x0d`) != 3 {
		t.Errorf("names not escaped:\n%q", b.String())
	}
}
