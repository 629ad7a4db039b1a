package explain

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/recording"
)

// FuzzScanRequests: any bytes of a requests.jsonl are scanned, and their
// slow requests read again and explained, without panic, strictly and
// with a tally and a window; an error is one bounded line naming the
// file and line, and no statistic holds a latency the window rules out.
func FuzzScanRequests(f *testing.F) {
	seed, err := os.ReadFile("testdata/requests.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-100]) // cut by a crash
	f.Add([]byte(`{"arrival":"2026-11-21T20:27:42.5Z","end":"2026-11-21T20:27:42.6Z","latency_ms":1e9,"client":"a:1","api_key":0,"answered":true}`))
	t0 := time.Date(2026, 11, 21, 20, 27, 42, 0, time.UTC)
	win := recording.Window{Start: t0, End: t0.Add(2 * time.Second)}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, rd := range []recording.Reader{{}, {Window: win, Tally: &recording.Tally{}}} {
			scan, err := ScanRequestsWith(rd, path, nil)
			if err != nil {
				checkLineError(t, path, err)
				continue
			}
			if rd.Tally != nil {
				for _, c := range scan.cands {
					if !(c.lat >= 0 && c.lat <= 2000+2*1000) {
						t.Fatalf("a latency of %v ms in a 2 s window was kept", c.lat)
					}
				}
			}
			_, err = New(Config{}, NewIndex(), nil).Run(scan, RunOptions{Top: 3}, func(*Finding) error { return nil })
			if err != nil {
				checkLineError(t, path, err)
			}
		}
	})
}

// checkLineError: an error reading a file names it and the line (or
// byte), in one line of bounded length.
func checkLineError(t *testing.T, path string, err error) {
	t.Helper()
	var le *recording.LineError
	if !errors.As(err, &le) {
		t.Fatalf("error without a line: %v", err)
	}
	msg := err.Error()
	if strings.Contains(msg, "\n") || len(msg) > len(path)+600 || !strings.HasPrefix(msg, path) {
		t.Fatalf("error of %d bytes: %.800q", len(msg), msg)
	}
}
