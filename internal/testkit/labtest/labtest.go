// Package labtest gives tests in any kscope package a real Kafka broker
// (internal/lab) and packet captures (tcpdump), with one policy for missing
// prerequisites: skip locally, but fail when CI=true, so CI can never pass
// by skipping the tests that matter. scripts/setup.sh installs everything.
package labtest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/prereq"
)

// Unavailable skips t because a prerequisite is missing, or fails it under
// CI=true: CI can never pass by skipping. Every kscope test that needs
// something from the machine goes through it (or through prereq, where
// labtest cannot be imported).
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	prereq.Unavailable(t, "labtest: "+format, args...)
}

// RequireKafka skips (fails under CI=true) unless java and the Kafka jars
// are available; it resolves the jars via scripts/kafka-jars.sh if needed.
// It returns the libs dir.
func RequireKafka(t testing.TB) string {
	t.Helper()
	if _, err := lab.JavaPath(); err != nil {
		Unavailable(t, "%v", err)
	}
	// The first resolution may download ~45 MB from Maven Central.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	libs, err := lab.EnsureLibs(ctx)
	if err != nil {
		Unavailable(t, "%v", err)
	}
	return libs
}

// RequireRoot skips (fails under CI=true) unless running as root, which
// packet capture needs.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root (euid %d)", os.Geteuid())
	}
}

// Broker starts a broker for the test and stops it in t.Cleanup. Dir
// defaults to a t.TempDir and LibsDir to RequireKafka's. On failure the
// tail of broker.out is logged.
func Broker(t testing.TB, cfg lab.BrokerConfig) *lab.Broker {
	t.Helper()
	libs := RequireKafka(t)
	if cfg.LibsDir == "" {
		cfg.LibsDir = libs
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	start := time.Now()
	b, err := lab.StartBroker(context.Background(), cfg)
	if err != nil {
		t.Fatalf("labtest: %v", err)
	}
	t.Logf("labtest: broker %s (pid %d) started in %v", b.Addr(), b.PID(), time.Since(start).Round(time.Millisecond))
	// Registered after t.TempDir's cleanup, so it runs before the dir is
	// removed.
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("labtest: %v", err)
		}
		if t.Failed() {
			t.Logf("labtest: tail of %s:\n%s", b.OutPath(), tail(b.OutPath(), 40))
		}
	})
	return b
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// StopCluster stops c at the end of a test. A node that had to be
// SIGKILLed after the grace is logged with the tail of its output, not
// failed: all nodes of a combined KRaft cluster stop together, and a
// node's controlled shutdown sometimes waits on a controller quorum that
// is itself going away; what the test checks was done before. Any other
// error (a namespace, mount or loop device left behind) fails the test,
// and StopCluster then returns false.
func StopCluster(t testing.TB, c *lab.Cluster) bool {
	t.Helper()
	killed, ok := false, true
	for _, err := range leafErrors(c.Stop()) {
		if !errors.Is(err, lab.ErrKilled) {
			t.Errorf("labtest: stop the cluster: %v", err)
			ok = false
			continue
		}
		t.Logf("labtest: stop the cluster: %v", err)
		killed = true
	}
	if killed {
		for _, b := range c.Brokers() {
			t.Logf("labtest: tail of %s:\n%s", b.OutPath(), tail(b.OutPath(), 15))
		}
	}
	return ok
}

// leafErrors flattens errors.Join's tree into its leaves.
func leafErrors(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}
