package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

// damagedRecording writes a 547 ms recording of 50 produce requests of
// 2 ms, one write each, then damages it.
func damagedRecording(t *testing.T, damage func(dir string)) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for i := range 50 {
		a := float64(i * 10)
		w.Request(&event.Request{Arrival: at(a), End: at(a + 2), LatencyMs: 2, BrokerMs: 2, Client: "127.0.0.1:40000",
			API: "Produce", APIKey: 0, APIVersion: 11, CorrelationID: int32(i), Answered: true,
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: 1, Bytes: 100 + i}}})
		w.Write(&event.Write{Start: at(a + 0.5), End: at(a + 0.6), LatencyMs: 0.1, TID: 7, Op: "write",
			Bytes: int64(100 + i), File: "t-0/00000000000000000000.log", Topic: "t", Partition: 0, Dev: "7:0"})
	}
	if err := w.Close(&recording.Meta{Tool: "test", Start: t0, End: at(547)}); err != nil {
		t.Fatal(err)
	}
	damage(dir)
	return dir
}

// editLines rewrites a recording file's lines with edit.
func editLines(t *testing.T, path string, edit func(lines []string) []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if err := os.WriteFile(path, []byte(strings.Join(edit(lines), "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestExplainAndReportDamagedRecording: what a crash, a disk or a hostile
// hand leaves in a recording. A last line cut short is left out with a
// warning naming it; values that cannot be true are left out of every
// statistic with one warning (count, first file:line); a bad line
// elsewhere is bad input with a short, escaped error; a FIFO in place of
// a file is refused at once.
func TestExplainAndReportDamagedRecording(t *testing.T) {
	requests := func(dir string) string { return filepath.Join(dir, recording.RequestsFile) }
	tests := []struct {
		name     string
		damage   func(t *testing.T, dir string)
		code     int
		stderr   []string // substrings of stderr
		summary  string   // substring of explain's summary, when it runs
		maxError int      // explain's stderr is at most this long
	}{
		{
			name: "last line cut by a crash",
			damage: func(t *testing.T, dir string) {
				editLines(t, requests(dir), func(l []string) []string { l[49] = l[49][:40]; return l })
			},
			code:    ExitOK,
			stderr:  []string{"requests.jsonl:50: the last line is cut short"},
			summary: "49 answered produce requests",
		},
		{
			name: "writes.jsonl cut by a crash",
			damage: func(t *testing.T, dir string) {
				p := filepath.Join(dir, recording.WritesFile)
				editLines(t, p, func(l []string) []string { l[49] = l[49][:70]; return l })
			},
			code:    ExitOK,
			stderr:  []string{"writes.jsonl:50: the last line is cut short"},
			summary: "evidence: 49 writes",
		},
		{
			name: "impossible latencies",
			damage: func(t *testing.T, dir string) {
				editLines(t, requests(dir), func(l []string) []string {
					l[5] = strings.Replace(l[5], `"latency_ms":2,`, `"latency_ms":1e9,`, 1)
					l[6] = strings.Replace(l[6], `"latency_ms":2,`, `"latency_ms":-5,`, 1)
					l[7] = strings.Replace(strings.Replace(l[7], `2026-11-21T12:00:00.07Z`, `2099-11-21T12:00:00.07Z`, 1), `2026-11-21T12:00:00.072Z`, `2099-11-21T12:00:00.072Z`, 1)
					return l
				})
			},
			code:    ExitOK,
			stderr:  []string{"requests.jsonl:6: 3 lines with impossible values left out", "latency_ms 1e+09 is longer than the recording"},
			summary: "47 answered produce requests; slow: >= 2.0 ms",
		},
		{
			name: "a write in another year",
			damage: func(t *testing.T, dir string) {
				editLines(t, filepath.Join(dir, recording.WritesFile), func(l []string) []string {
					l[3] = strings.ReplaceAll(l[3], "2026-11-21", "1970-01-01")
					return l
				})
			},
			code:    ExitOK,
			stderr:  []string{"writes.jsonl:4: 1 line with impossible values", "before the recording's start"},
			summary: "evidence: 49 writes",
		},
		{
			name: "50 MB bad value",
			damage: func(t *testing.T, dir string) {
				editLines(t, requests(dir), func(l []string) []string {
					l[10] = `{"arrival":"2026-11-21T12:00:00.1Z","api_key":` + strings.Repeat("1", 50<<20) + `,"answered":true}`
					return l
				})
			},
			code:     ExitBadInput,
			stderr:   []string{"requests.jsonl:11 (byte ", "cannot unmarshal number"},
			maxError: 1000,
		},
		{
			name: "bad line in the middle",
			damage: func(t *testing.T, dir string) {
				editLines(t, requests(dir), func(l []string) []string { l[20] = l[20][:40] + "\x1b[2J"; return l })
			},
			code:     ExitBadInput,
			stderr:   []string{"requests.jsonl:21 (byte ", `\x1b[2J`},
			maxError: 1000,
		},
		{
			name: "FIFO as writes.jsonl",
			damage: func(t *testing.T, dir string) {
				p := filepath.Join(dir, recording.WritesFile)
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(p, 0o644); err != nil {
					t.Fatal(err)
				}
			},
			code:   ExitBadInput,
			stderr: []string{"writes.jsonl", "not a regular file"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := damagedRecording(t, func(dir string) { tc.damage(t, dir) })
			out, errOut := runBounded(t, "explain", dir, "--summary")
			if out.code != tc.code {
				t.Fatalf("explain: exit %d, want %d: %.2000s", out.code, tc.code, errOut)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("explain's stderr lacks %q: %.2000s", want, errOut)
				}
			}
			if tc.summary != "" && !strings.Contains(out.stdout, tc.summary) {
				t.Errorf("summary lacks %q:\n%s", tc.summary, out.stdout)
			}
			if tc.maxError > 0 && (len(errOut) > tc.maxError || strings.Count(errOut, "\n") != 1 || strings.ContainsRune(errOut, 0x1b)) {
				t.Errorf("error of %d bytes, %d lines: %.2000q", len(errOut), strings.Count(errOut, "\n"), errOut)
			}
			html := filepath.Join(t.TempDir(), "r.html")
			out, errOut = runBounded(t, "report", dir, "-o", html)
			if out.code != tc.code {
				t.Fatalf("report: exit %d, want %d: %.2000s", out.code, tc.code, errOut)
			}
			for _, want := range tc.stderr {
				if !strings.Contains(errOut, want) {
					t.Errorf("report's stderr lacks %q: %.2000s", want, errOut)
				}
			}
			if tc.code == ExitOK {
				page, err := os.ReadFile(html)
				if err != nil || !strings.Contains(string(page), "Left out: ") {
					t.Errorf("the page does not say what was left out (%v)", err)
				}
			}
		})
	}
}

type result struct {
	code   int
	stdout string
}

// runBounded runs kscope, failing the test if it takes more than 20 s (a
// FIFO waited on).
func runBounded(t *testing.T, args ...string) (result, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- Main(args, &out, &errOut) }()
	select {
	case code := <-done:
		return result{code, out.String()}, errOut.String()
	case <-time.After(20 * time.Second):
		t.Fatalf("%v: still running after 20 s", args)
		return result{}, ""
	}
}
