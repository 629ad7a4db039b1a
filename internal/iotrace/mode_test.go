package iotrace

import (
	"os"
	"strings"
	"testing"
)

// TestMode: a Tracer with FunctionsAuto reports its mode, and where fentry
// is refused (as on this project's machines) says why, for the system
// calls and the file system functions; FunctionsOn then fails, and
// SyscallTracepoints does not try fentry. Nothing stays loaded
// (TestTraceOwnCalls checks Close). TestFunctionsInVM tests both where
// fentry is allowed.
func TestMode(t *testing.T) {
	requireRoot(t)
	cfg := Config{PID: os.Getpid(), LogDirs: []string{t.TempDir()}, Functions: FunctionsAuto}
	tr, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := tr.Mode()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("mode: %s", m)
	if m.Tracepoints == m.SyscallFentry {
		t.Errorf("system calls timed at tracepoints %v and fentry %v: want one", m.Tracepoints, m.SyscallFentry)
	}
	if m.Tracepoints && (m.SyscallFentryErr == nil || !strings.Contains(m.SyscallFentryErr.Error(), "ksio_s")) {
		t.Errorf("no reason given for not timing system calls at fentry: %v", m.SyscallFentryErr)
	}
	if len(m.Functions) == 0 && (m.FunctionsErr == nil || !strings.Contains(m.FunctionsErr.Error(), "ext4_file_write_iter")) {
		t.Errorf("no reason given for refusing fentry: %v", m.FunctionsErr)
	}
	if len(m.Functions) == 0 {
		cfg.Functions = FunctionsOn
		if tr, err := Open(cfg); err == nil {
			tr.Close()
			t.Error("FunctionsOn opened a tracer where no function can be timed")
		}
	}
	cfg.Functions, cfg.SyscallProbes = FunctionsOff, SyscallTracepoints
	tr, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m = tr.Mode()
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if !m.Tracepoints || m.SyscallFentry || m.SyscallFentryErr != nil {
		t.Errorf("SyscallTracepoints: mode %s (fentry %v, error %v)", m, m.SyscallFentry, m.SyscallFentryErr)
	}
}

func TestParseSyscallProbe(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    SyscallProbe
		wantErr bool
	}{
		{"auto", SyscallsAuto, false},
		{"tracepoint", SyscallTracepoints, false},
		{"fentry", 0, true},
		{"", 0, true},
	} {
		got, err := ParseSyscallProbe(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseSyscallProbe(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != tc.in {
			t.Errorf("%q parses to %v, which prints as %q", tc.in, got, got.String())
		}
	}
}
