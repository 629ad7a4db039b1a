package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLabFSFlagsRefused: hostile --variants knobs, --commit-interval,
// --port and --record values end lab fs before it makes anything, with
// exit 2 and one line naming what was refused.
func TestLabFSFlagsRefused(t *testing.T) {
	tmp := t.TempDir()
	work := filepath.Join(tmp, "work")
	full := filepath.Join(tmp, "full")
	if err := os.MkdirAll(filepath.Join(full, "ext4-1"), 0o755); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		says string
	}{
		{"journal on another device", []string{"--variants", "ext4:journal_path=/dev/sda"}, "only a-z, 0-9, _ and = are taken"},
		{"unknown option", []string{"--variants", "ext4:usrjquota=q"}, `"usrjquota" is not one lab fs takes`},
		{"xfs option on ext4", []string{"--variants", "ext4:logbsize=256k"}, "not one lab fs takes for ext4"},
		{"commit out of range", []string{"--variants", "ext4:commit=0"}, "from 1 to 300"},
		{"commit interval not whole seconds", []string{"--commit-interval", "1500ms"}, "whole seconds"},
		{"commit interval on xfs only", []string{"--variants", "xfs", "--commit-interval", "30s"}, "ext4 variants"},
		{"port out of range", []string{"--port", "70000"}, "not a TCP port"},
		{"record into a full directory", []string{"--record", full}, "not empty"},
		{"record inside the work dir", []string{"--record", filepath.Join(work, "rec")}, "inside"},
		{"record-trials unknown", []string{"--record", filepath.Join(tmp, "r"), "--record-trials", "some"}, "first or all"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append([]string{"lab", "fs", "--work-dir", work}, c.args...)
			code, out, errOut := run(t, args...)
			if code != ExitBadInput {
				t.Fatalf("exit %d, want %d\nstdout: %.300s\nstderr: %.300s", code, ExitBadInput, out, errOut)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, c.says) {
				t.Errorf("stderr %q: want one line saying %q", errOut, c.says)
			}
		})
	}
}
