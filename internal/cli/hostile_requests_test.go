package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture/capturetest"
)

// writePcap writes pkts as a pcap of link type link.
func writePcap(t *testing.T, path string, link layers.LinkType, pkts []capturetest.Packet) {
	t.Helper()
	var buf bytes.Buffer
	w, err := capturetest.NewPcapWriter(&buf, link)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(pkts...); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRequestsHostileCaptures: `kscope requests` on captures that are
// not what they seem says so: a clock step is no latency, a link type it
// does not read is named, a FIFO with no writer or a device is bad input
// (exit 2), at once.
func TestRequestsHostileCaptures(t *testing.T) {
	dir := t.TempDir()
	c := capturetest.NewConn(capturetest.ClientAddr(1), capturetest.Broker)
	pkts := c.Handshake()
	pkts = append(pkts, c.Send(true, capturetest.APIVersionsRequest(1, "app"), 1448)...)
	c.Now = c.Now.Add(-10 * time.Second) // the clock steps back
	pkts = append(pkts, c.Send(false, capturetest.APIVersionsResponse(1), 1448)...)
	clockStep := filepath.Join(dir, "clock-step.pcap")
	writePcap(t, clockStep, layers.LinkTypeRaw, pkts)
	user0 := filepath.Join(dir, "user0.pcap")
	writePcap(t, user0, 147, pkts)
	fifo := filepath.Join(dir, "fifo.pcap")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name           string
		args           []string
		code           int
		stdout, stderr []string // substrings
		not            string   // in neither
	}{
		{"clock step", []string{"requests", clockStep}, 0,
			[]string{"clock-step"}, []string{"1 responses timestamped before their requests"}, "-99"},
		{"clock step summary", []string{"requests", "--summary", clockStep}, 0,
			nil, []string{"1 responses timestamped before their requests"}, "-99"},
		{"unsupported link type", []string{"requests", user0}, 0,
			nil, []string{"warning: " + user0 + ": 4 packets of link type 147 (USER0", "4 packets of an unsupported link type"}, ""},
		{"FIFO without a writer", []string{"requests", fifo}, ExitBadInput, nil, []string{"fifo.pcap", "no writer"}, ""},
		{"a device", []string{"requests", "/dev/zero"}, ExitBadInput, nil, []string{"/dev/zero: not a regular file"}, ""},
		{"a directory", []string{"requests", dir}, ExitBadInput, nil, []string{"not a regular file (a directory)"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				code        int
				out, errOut string
			}
			done := make(chan result, 1)
			go func() {
				code, out, errOut := run(t, tc.args...)
				done <- result{code, out, errOut}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("kscope %s: still running after 20 s", strings.Join(tc.args, " "))
			}
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", r.code, tc.code, r.errOut)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.out)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.errOut)
				}
			}
			if tc.not != "" && strings.Contains(r.out+r.errOut, tc.not) {
				t.Errorf("output has %q:\n%s\n%s", tc.not, r.out, r.errOut)
			}
		})
	}
}
