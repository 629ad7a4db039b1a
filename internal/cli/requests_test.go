package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const realCapture = "../../testdata/captures/produce-lz4-and-ids.pcapng"

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = Main(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRequestsCommand(t *testing.T) {
	notCapture := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(notCapture, []byte("just some text, not packets"), 0o644)
	truncated := filepath.Join(t.TempDir(), "cut.pcapng")
	data, err := os.ReadFile(realCapture)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(truncated, data[:len(data)/2], 0o644)

	cases := []struct {
		name     string
		args     []string
		code     int
		stdout   []string // substrings
		stderr   []string
		jsonRows int // with --format json: rows expected (-1: don't count)
	}{
		{name: "table", args: []string{"requests", realCapture}, stdout: []string{"ARRIVAL TIME", "order-1 +199", "console-producer"},
			stderr: []string{"38 requests decoded", "0 B skipped"}},
		{name: "json all", args: []string{"requests", "--format", "json", "-q", realCapture}, jsonRows: 38},
		{name: "json produce to orders", args: []string{"requests", "--format", "json", "--api", "produce", "--topic", "orders", realCapture}, jsonRows: 1},
		{name: "api by key", args: []string{"requests", "--format", "json", "--api", "18", realCapture}, jsonRows: -1, stdout: []string{`"api":"ApiVersions"`}},
		{name: "slow filter", args: []string{"requests", "--format", "json", "--slow", "1h", realCapture}, jsonRows: 0},
		{name: "client id filter", args: []string{"requests", "--format", "json", "--client", "console-producer", realCapture}, jsonRows: -1, stdout: []string{`"client_id":"console-producer"`}},
		{name: "csv", args: []string{"requests", "--format", "csv", "-q", realCapture}, stdout: []string{"arrival,end,latency_ms", "order-1 order-2"}},
		{name: "summary", args: []string{"requests", "--summary", realCapture}, stdout: []string{"p99.9(ms)", "Produce", "orders", "SLOWEST"}},
		{name: "other port", args: []string{"requests", "--port", "9093", "--format", "json", realCapture}, jsonRows: 0},
		{name: "not a capture", args: []string{"requests", notCapture}, code: ExitBadInput, stderr: []string{"notes.txt: not a pcap or pcapng file"}},
		{name: "missing file", args: []string{"requests", "/nonexistent.pcap"}, code: ExitBadInput, stderr: []string{"no such file"}},
		{name: "bad format", args: []string{"requests", "--format", "xml", realCapture}, code: ExitBadInput, stderr: []string{`"xml" for "--format"`}},
		{name: "bad flag", args: []string{"requests", "--frobnicate", realCapture}, code: ExitBadInput, stderr: []string{"unknown flag"}},
		{name: "bad port", args: []string{"requests", "--port", "70000", realCapture}, code: ExitBadInput},
		{name: "no files", args: []string{"requests"}, code: ExitBadInput},
		{name: "truncated", args: []string{"requests", "-q=false", truncated}, stderr: []string{"warning:", "cut.pcapng: damaged at byte offset "}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, c.code, errOut)
			}
			for _, s := range c.stdout {
				if !strings.Contains(out, s) {
					t.Errorf("stdout lacks %q:\n%s", s, out)
				}
			}
			for _, s := range c.stderr {
				if !strings.Contains(errOut, s) {
					t.Errorf("stderr lacks %q:\n%s", s, errOut)
				}
			}
			if c.jsonRows != 0 || strings.Contains(strings.Join(c.args, " "), "json") && c.jsonRows == 0 {
				rows := 0
				for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
					if line == "" {
						continue
					}
					var v map[string]any
					if err := json.Unmarshal([]byte(line), &v); err != nil {
						t.Fatalf("not JSON Lines: %q", line)
					}
					rows++
				}
				if c.jsonRows >= 0 && rows != c.jsonRows {
					t.Errorf("%d JSON rows, want %d", rows, c.jsonRows)
				}
			}
		})
	}
}
