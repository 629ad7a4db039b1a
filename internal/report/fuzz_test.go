package report

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/recording"
)

// FuzzBuildRequests: any bytes of a recording's requests.jsonl make a
// report or one bounded error line naming the file and line, and no
// chart holds a latency the recording's window rules out.
func FuzzBuildRequests(f *testing.F) {
	seed, err := os.ReadFile("testdata/requests.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add(seed[:len(seed)-100]) // cut by a crash
	f.Add([]byte(`{"arrival":"2026-11-21T20:27:42.5Z","end":"2026-11-21T20:27:42.6Z","latency_ms":1e9,"client":"a:1","api":"Produce","api_key":0,"answered":true}`))
	t0 := time.Date(2026, 11, 21, 20, 27, 42, 0, time.UTC)
	meta := &recording.Meta{Version: recording.FormatVersion, Start: t0, End: t0.Add(2 * time.Second)}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "requests.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := BuildFrom(Inputs{Requests: path, Meta: meta, Dir: "rec"}, Options{Top: 5, MaxCols: 20})
		if err != nil {
			var le *recording.LineError
			if msg := err.Error(); !errors.As(err, &le) || strings.Contains(msg, "\n") || len(msg) > len(path)+600 {
				t.Fatalf("error of %d bytes: %.800q", len(msg), msg)
			}
			return
		}
		if d.Produce.MaxMs > 4000 {
			t.Fatalf("a latency of %v ms in a 2 s recording was drawn", d.Produce.MaxMs)
		}
		for _, s := range d.APIs {
			if s.Hist.MaxMs > 4000 || s.Hist.Origin.Before(t0.Add(-time.Hour)) {
				t.Fatalf("%s: %v ms from %v drawn", s.API, s.Hist.MaxMs, s.Hist.Origin)
			}
		}
		if err := WriteHTML(io.Discard, d); err != nil {
			t.Fatal(err)
		}
	})
}
