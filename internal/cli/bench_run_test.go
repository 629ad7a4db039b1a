package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// execBenchRun runs `bench run` with args and returns its output and error.
func execBenchRun(args ...string) (string, string, error) {
	var stdout, stderr syncBuffer
	cmd := newBenchRunCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return stdout.String(), stderr.String(), err
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Bad flags, impossible combinations and an unreachable cluster are one
// clear line and exit code 2, quickly, and no result file.
func TestBenchRunBadInput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "r.json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no --out", []string{"--bootstrap", "127.0.0.1:1"}, "--out"},
		{"bad rate", []string{"--rate", "fast", "--out", out}, "--rate"},
		{"negative rate", []string{"--rate", "-5", "--out", out}, "--rate"},
		{"bad size", []string{"--message-size", "uniform:9-1", "--out", out}, "--message-size"},
		{"bad keys", []string{"--keys", "hot:7", "--out", out}, "--keys"},
		{"bad acks", []string{"--acks", "2", "--out", out}, "--acks"},
		{"idempotent with acks 1", []string{"--acks", "1", "--idempotent", "--out", out}, "--idempotent"},
		{"bad compression", []string{"--compression", "brotli", "--out", out}, "--compression"},
		{"zero producers", []string{"--producers", "0", "--out", out}, "--producers"},
		{"unknown flag", []string{"--bogus"}, "unknown flag"},
		{"bad duration", []string{"--duration", "soon", "--out", out}, "duration"},
		{"unwritable --out", []string{"--out", filepath.Join(dir, "missing", "r.json")}, "--out"},
		{"unreachable cluster", []string{"--bootstrap", "127.0.0.1:1", "--connect-timeout", "3s", "--out", out}, "cannot reach the cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			_, _, err := execBenchRun(tt.args...)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitBadInput {
				t.Fatalf("err = %v, want exit code %d", err, ExitBadInput)
			}
			if msg := err.Error(); !strings.Contains(msg, tt.want) || strings.Contains(msg, "\n") {
				t.Errorf("message %q: want one line mentioning %q", msg, tt.want)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a result was written")
			}
		})
	}
}

// Ctrl-C (SIGINT to the process) ends a run early and still writes a
// valid result, marked interrupted.
func TestBenchRunInterrupt(t *testing.T) {
	b := labtest.Broker(t, lab.BrokerConfig{})
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr syncBuffer
	cmd := newBenchRunCmd()
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs([]string{"--bootstrap", b.Addr(), "--topic", "cli-interrupt", "--partitions", "2",
		"--rate", "500", "--warmup", "1s", "--duration", "2m", "--out", out})
	done := make(chan error, 1)
	go func() { done <- cmd.Execute() }()

	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(stderr.String(), "bench:   1s") {
		if time.Now().After(deadline) {
			t.Fatalf("no progress after a minute:\n%s", stderr.String())
		}
		select {
		case err := <-done:
			t.Fatalf("ended early: %v\n%s", err, stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("still running 30 s after SIGINT:\n%s", stderr.String())
	}
	t.Logf("stderr:\n%s\nstdout:\n%s", stderr.String(), stdout.String())
	if err != nil {
		t.Fatalf("err = %v", err)
	}
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res bench.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if !res.Interrupted || res.Totals.Acked == 0 || res.Totals.Lost != 0 || res.Workload.DurationMs < 1000 || res.Workload.DurationMs > 5000 {
		t.Errorf("result: interrupted %v, measured %d ms, totals %+v", res.Interrupted, res.Workload.DurationMs, res.Totals)
	}
	if !strings.Contains(stdout.String(), "(interrupted)") {
		t.Errorf("summary does not say interrupted: %s", stdout.String())
	}
}
