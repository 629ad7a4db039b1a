package cli

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestExitStatusEveryCommand walks the whole command tree, so that a
// command added later is held to docs/exit-status.md too: --help exits
// 0; an unknown flag, an unknown subcommand and arguments a command's
// argument check refuses exit 2 with one line pointing at the help.
func TestExitStatusEveryCommand(t *testing.T) {
	walk(newRoot(io.Discard, io.Discard), func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		t.Run(c.CommandPath(), func(t *testing.T) {
			for _, help := range []string{"--help", "-h"} {
				code, out, errOut := run(t, append(path, help)...)
				if code != ExitOK || !strings.Contains(out, "Usage:") {
					t.Errorf("%s: exit %d, stdout %.100q, stderr %.200q", help, code, out, errOut)
				}
			}
			wantUsageError(t, append(path, "--no-such-flag"), "unknown flag")
			if c.HasSubCommands() {
				wantUsageError(t, append(path, "nosuch"), `unknown command "nosuch"`)
				return
			}
			if c.Args == nil {
				t.Fatalf("declares no argument check (Args): its wrong arguments would not be usage errors")
			}
			for _, args := range [][]string{nil, {"/nonexistent/a"}, strings.Fields("/nonexistent/a b c d e f g h i")} {
				// Only what the check refuses runs: the rest would work.
				if c.ValidateArgs(args) != nil {
					wantUsageError(t, append(path, args...), "")
				}
			}
		})
	})
}

// wantUsageError runs kscope with args and wants exit 2, nothing on
// stdout, and one line on stderr that says want and where the help is.
func wantUsageError(t *testing.T, args []string, want string) {
	t.Helper()
	code, out, errOut := run(t, args...)
	if code != ExitBadInput || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 ||
		!strings.Contains(errOut, want) || !strings.Contains(errOut, "--help')") {
		t.Errorf("kscope %s: exit %d, stdout %.100q, stderr %.300q; want exit %d and one line with %q",
			strings.Join(args, " "), code, out, errOut, ExitBadInput, want)
	}
}

// TestExitStatusTable: the rows of docs/exit-status.md that the walk
// above does not cover.
func TestExitStatusTable(t *testing.T) {
	tmp := t.TempDir()
	data, err := os.ReadFile(txnSegment)
	if err != nil {
		t.Fatal(err)
	}
	data[700] ^= 0xff
	damaged := filepath.Join(tmp, "00000000000000000000.log")
	if err := os.WriteFile(damaged, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		code int
		want string // in stdout for 0, stderr otherwise
	}{
		{"no command: the help", nil, ExitOK, "Available Commands"},
		{"a group alone: its help", []string{"segment"}, ExitOK, "Available Commands"},
		{"help", []string{"help"}, ExitOK, "Available Commands"},
		{"help of a command", []string{"help", "segment", "dump"}, ExitOK, "Usage:"},
		{"help of nothing", []string{"help", "nosuch"}, ExitBadInput, `unknown help topic "nosuch"`},
		{"help of nothing under a group", []string{"help", "segment", "nosuch"}, ExitBadInput, `unknown help topic "segment nosuch"`},
		{"unknown command", []string{"nosuch"}, ExitBadInput, `unknown command "nosuch" for "kscope"`},
		{"a typo gets a suggestion", []string{"segment", "dumpp"}, ExitBadInput, "did you mean dump?"},
		{"a typo in help", []string{"help", "requets"}, ExitBadInput, "did you mean requests?"},
		{"missing argument", []string{"requests"}, ExitBadInput, "requires at least 1 arg"},
		{"extra argument", []string{"segment", "lookup", "a", "b"}, ExitBadInput, "accepts 1 arg"},
		{"flags that go together", []string{"lab", "broker", "start", "--dir", tmp, "--ssl-port", "9094"}, ExitBadInput, "need --tls"},
		{"bad input file", []string{"requests", "/nonexistent.pcap"}, ExitBadInput, "no such file"},
		{"nothing found", []string{"segment", "verify", "-q", txnDir}, ExitOK, ""},
		{"a problem found", []string{"segment", "verify", "-q", damaged}, ExitFailure, "1 problems found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			where := errOut
			if c.code == ExitOK {
				where = out
			}
			if code != c.code || !strings.Contains(where, c.want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %.300s\nstderr: %.300s", code, c.code, c.want, out, errOut)
			}
		})
	}
}
