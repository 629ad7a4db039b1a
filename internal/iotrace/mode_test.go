package iotrace

import (
	"os"
	"strings"
	"testing"
)

// TestMode: a Tracer with FunctionsAuto reports its mode, and where fentry
// is refused (as on this project's machines) says why; FunctionsOn then
// fails. Nothing stays loaded (TestTraceOwnCalls checks Close).
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
	if !m.Tracepoints {
		t.Error("tracepoint mode not reported")
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
}
