package explain

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
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
		fuzzScans(t, data, win, func(rd recording.Reader, scan *Scan) error {
			if rd.Tally != nil {
				for _, c := range scan.cands {
					if !(c.lat >= 0 && c.lat <= 2000+2*1000) {
						t.Fatalf("a latency of %v ms in a 2 s window was kept", c.lat)
					}
				}
			}
			_, err := New(Config{}, NewIndex(), nil).Run(scan, RunOptions{Top: 3}, func(*Finding) error { return nil })
			return err
		})
	})
}

// fuzzScans writes data as a requests.jsonl and scans it strictly, then
// with a tally and win, handing each scan to run; a scan's or run's
// error must be a line error.
func fuzzScans(t *testing.T, data []byte, win recording.Window, run func(rd recording.Reader, scan *Scan) error) {
	t.Helper()
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
		if err := run(rd, scan); err != nil {
			checkLineError(t, path, err)
		}
	}
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

// FuzzExplainFetches: any bytes of a requests.jsonl are read as
// kscope explain --api fetch reads them (the fetch split's second pass,
// then the slow fetches again), without panic, strictly and with a tally
// and a window; an error is one bounded line naming the file and line;
// no finding's split is negative or beyond its latency.
func FuzzExplainFetches(f *testing.F) {
	seed, err := os.ReadFile("testdata/requests.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	var fetches []byte
	for _, r := range []*event.Request{consumerFetch(1, -50, 1, -40, 0, 900_000, 1000), consumerFetch(7, 0, 300, 302, 100, 900_000, 1<<20),
		consumerFetch(8, 400, 1, 902, 100, 100, 0)} {
		line, _ := json.Marshal(r)
		fetches = append(append(fetches, line...), '\n')
	}
	f.Add(append(seed, fetches...))
	f.Add(fetches[:len(fetches)-50]) // cut by a crash
	win := recording.Window{Start: t0.Add(-time.Second), End: t0.Add(2 * time.Second)}
	f.Fuzz(func(t *testing.T, data []byte) {
		idx := indexOf(t, []*event.ConnThread{connThread(21, consumerConn, -1000)}, []*event.KernelWait{kwait(21, 20, 270, sendfileStack...)})
		fuzzScans(t, data, win, func(rd recording.Reader, scan *Scan) error {
			_, err := New(Config{Slow: time.Millisecond}, idx, nil).runFetches(rd, scan, RunOptions{Top: 3}, func(f *Finding) error {
				sp := f.FetchSplit
				if sp == nil || sp.AbnormalMs < 0 || sp.PurgatoryMs < 0 || sp.TotalMs > float64(f.End.Sub(f.Arrival))/1e6+1e-6 || f.ExplainedMs > sp.AbnormalMs+1e-6 {
					t.Fatalf("finding %+v, split %+v", f, sp)
				}
				return nil
			})
			return err
		})
	})
}

// FuzzExplainGroups runs explain --api group over arbitrary requests
// files seeded with a rebalance: no panic, a line error with its
// position for a bad line, and every finding's split adds up, with no
// more explained than its own part.
func FuzzExplainGroups(f *testing.F) {
	var groups []byte
	for _, r := range rebalance(2501) {
		line, _ := json.Marshal(r)
		groups = append(append(groups, line...), '\n')
	}
	f.Add(groups)
	f.Add(groups[:len(groups)-50]) // cut by a crash
	win := recording.Window{Start: t0.Add(-time.Minute), End: t0.Add(time.Minute)}
	f.Fuzz(func(t *testing.T, data []byte) {
		fuzzScans(t, data, win, func(rd recording.Reader, scan *Scan) error {
			_, err := New(Config{Slow: time.Millisecond}, NewIndex(), nil).runGroups(rd, scan, RunOptions{Top: 3}, func(f *Finding) error {
				sp := f.GroupSplit
				if sp == nil || sp.HoldMs < 0 || sp.OwnMs < -1e-6 || f.ExplainedMs > sp.OwnMs+1e-6 {
					t.Fatalf("finding %+v, split %+v", f, sp)
				}
				return nil
			})
			return err
		})
	})
}
