package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestTLSKeyLogFlag: every command that decodes captures takes a key log,
// and the commands that load the key-log agent take --tls-keys.
func TestTLSKeyLogFlag(t *testing.T) {
	for _, tc := range []struct {
		cmd  []string
		keys bool
	}{
		{[]string{"requests"}, false},
		{[]string{"explain"}, false},
		{[]string{"report"}, false},
		{[]string{"model"}, false},
		{[]string{"record"}, true},
		{[]string{"agent"}, true},
	} {
		var out, errOut bytes.Buffer
		if code := Main(append(tc.cmd, "--help"), &out, &errOut); code != 0 {
			t.Fatalf("%v --help: exit %d: %s", tc.cmd, code, errOut.String())
		}
		help := out.String()
		if !strings.Contains(help, "--tls-keylog") || tc.keys != strings.Contains(help, "--tls-keys ") {
			t.Errorf("%v: --tls-keylog %v, --tls-keys %v", tc.cmd, strings.Contains(help, "--tls-keylog"), strings.Contains(help, "--tls-keys "))
		}
	}
}

// TestTLSKeysOnlyAttach: --tls-keys takes attach, and not with a key log
// of one's own on record.
func TestTLSKeysOnlyAttach(t *testing.T) {
	for _, args := range [][]string{
		{"record", "--out", t.TempDir() + "/r", "--pid", "1", "--tls-keys", "steal"},
		{"record", "--out", t.TempDir() + "/r", "--pid", "1", "--tls-keys", "attach", "--tls-keylog", "k.log"},
		{"agent", "--tls-keys", "steal", "--duration", "1ms"},
	} {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != ExitBadInput {
			t.Errorf("%v: exit %d, want %d: %s", args, code, ExitBadInput, errOut.String())
		}
	}
}
