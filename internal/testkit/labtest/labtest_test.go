package labtest_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/testkit/traffic"
)

func TestCaptureBrokerTraffic(t *testing.T) {
	b := labtest.Broker(t, lab.BrokerConfig{})
	port, _ := strconv.Atoi(b.Addr()[strings.LastIndexByte(b.Addr(), ':')+1:])
	path := filepath.Join(t.TempDir(), "kafka.pcap")
	stop := labtest.Capture(t, "lo", port, path)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := traffic.ProduceFranz(ctx, b.Addr(), "captured", 10, "none", true); err != nil {
		t.Fatal(err)
	}
	stop()

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 24 || binary.LittleEndian.Uint32(data) != 0xa1b2c3d4 {
		t.Fatalf("%s is not a pcap (%d bytes)", path, len(data))
	}
	// Uncompressed records carry their message-id header in clear text.
	for _, id := range []string{"captured-0", "captured-9"} {
		if !bytes.Contains(data, []byte(id)) {
			t.Errorf("capture (%d bytes) lacks message id %q", len(data), id)
		}
	}
}

// TestUnavailablePolicy checks that missing prerequisites skip locally but
// fail under CI=true, by re-running this binary on a test that lacks one.
func TestUnavailablePolicy(t *testing.T) {
	if os.Getenv("LABTEST_HELPER") == "1" {
		t.Setenv("PATH", "/nonexistent")
		t.Setenv("JAVA_HOME", "")
		labtest.RequireKafka(t)
		return
	}
	for _, ci := range []string{"", "true"} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUnavailablePolicy$", "-test.v")
		cmd.Env = append(os.Environ(), "LABTEST_HELPER=1", "CI="+ci)
		out, err := cmd.CombinedOutput()
		switch {
		case ci == "" && (err != nil || !strings.Contains(string(out), "--- SKIP")):
			t.Errorf("CI unset: want skip, got %v:\n%s", err, out)
		case ci == "true" && (err == nil || !strings.Contains(string(out), "--- FAIL")):
			t.Errorf("CI=true: want failure, got %v:\n%s", err, out)
		}
	}
}
