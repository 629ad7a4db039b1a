package jvmlog

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/kscope-dev/kscope/internal/event"
)

// FuzzReadPauses feeds ReadPauses's reader crafted files. Seeds: the real
// broker log of testdata, in whole and line by line, and the lines of
// the unit tests.
func FuzzReadPauses(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("testdata", "g1-broker.log"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	lines := bytes.SplitAfter(data, []byte("\n"))
	for i := 0; i+2 <= len(lines); i += 7 {
		f.Add(bytes.Join(lines[i:i+2], nil))
	}
	for _, s := range []string{cleanup1 + gcFull + spFull, gcFull, spFull, spFull[:60],
		"[2026-11-25T13:38:04.418+0000][info][safepoint] Total time for which application threads were stopped: 0.0037000 seconds, Stopping threads took: 0.0001000 seconds\n",
		"[1795613884418ms][123456789ns][12.345s][8500p][8507t] Safepoint \"Cleanup\", Total: 1 ns\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		wd := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("read has not finished after 10s on a %d-byte input", len(data)))
		})
		defer wd.Stop()
		var n int64
		st, err := read(bytes.NewReader(data), func(p *event.JVMPause) error {
			n++
			if p.Kind != event.KindJVMPause || p.Source != Source || p.End.Before(p.Start) || p.LatencyMs < 0 || p.ReachMs < 0 ||
				(p.Type != event.PauseGC && p.Type != event.PauseSafepoint) {
				t.Fatalf("bad pause %+v", p)
			}
			for _, s := range []string{p.Name, p.Cause} {
				if len(s) > maxName || !utf8.ValidString(s) || strings.ContainsAny(s, "\n\x00") {
					t.Fatalf("bad name or cause %q", s)
				}
			}
			if p.Name == "" {
				t.Fatalf("no name: %+v", p)
			}
			return nil
		})
		if err != nil {
			t.Fatalf("no I/O error expected from memory: %v", err)
		}
		if st.Pauses != n || st.Bytes > int64(len(data)) || st.Lines > int64(bytes.Count(data, []byte("\n"))) ||
			st.Skipped > st.Lines || st.Safepoints+st.GCs+st.Skipped != st.Lines || st.Merged > st.GCs {
			t.Fatalf("stats %+v, %d pauses", st, n)
		}
	})
}
