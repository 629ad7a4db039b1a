package recording

import (
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/kscope-dev/kscope/internal/output"
)

// Tally counts, per file, the lines a Reader left out: a last line cut
// short (the file was being written when kscope or the host stopped), and
// events whose values cannot be true. Reading a file again counts none of
// its lines twice. It is safe for concurrent use.
type Tally struct {
	mu    sync.Mutex
	files []*Skipped
}

// Skipped is what was left out of one file.
type Skipped struct {
	Path string
	// CutLine is the number of the file's last line, left out because it
	// was cut short; 0 when it was not.
	CutLine int64
	// Implausible counts the lines left out for impossible values;
	// FirstLine and Reason are the first of them.
	Implausible int64
	FirstLine   int64
	Reason      string

	counted int64 // the last implausible line counted
}

func (t *Tally) file(path string) *Skipped {
	for _, s := range t.files {
		if s.Path == path {
			return s
		}
	}
	s := &Skipped{Path: path}
	t.files = append(t.files, s)
	return s
}

func (t *Tally) cut(path string, line int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.file(path).CutLine = line
}

func (t *Tally) implausible(path string, line int64, reason string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.file(path)
	if line <= s.counted {
		return // a second read of the file
	}
	s.counted = line
	if s.Implausible == 0 {
		s.FirstLine, s.Reason = line, reason
	}
	s.Implausible++
}

// Files are the files with lines left out, in the order first seen.
func (t *Tally) Files() []Skipped {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]Skipped, len(t.files))
	for i, s := range t.files {
		out[i] = *s
	}
	return out
}

// Warnings say, one line each, what was left out of which file and where
// (paths escaped).
func (t *Tally) Warnings() []string {
	var out []string
	for _, s := range t.Files() {
		path := output.Escape(s.Path)
		if s.CutLine > 0 {
			out = append(out, fmt.Sprintf("%s:%d: the last line is cut short (the file is still being written, or its writer stopped mid-line: a crash, a power loss): left out", path, s.CutLine))
		}
		if s.Implausible > 0 {
			noun := "lines"
			if s.Implausible == 1 {
				noun = "line"
			}
			out = append(out, fmt.Sprintf("%s:%d: %d %s with impossible values left out of every statistic (the first, here: %s)", path, s.FirstLine, s.Implausible, noun, s.Reason))
		}
	}
	return out
}

// Excerpt is the start of b, at most n bytes of it (whole runes), escaped
// for printing, with "…" when it was cut: how errors show a line or value
// from a file without echoing megabytes of it.
func Excerpt(b []byte, n int) string {
	if len(b) <= n {
		return output.Escape(string(b))
	}
	return output.Escape(string(b[:runeCut(b, n)])) + "…"
}

// shorten keeps the start and end of a long message (an error that
// quotes a value from a file), escaped, with "…" in place of the middle.
func shorten(msg string, head, tail int) string {
	if len(msg) <= head+tail+len("…") {
		return output.Escape(msg)
	}
	b := []byte(msg)
	end := len(b) - tail
	for end < len(b) && !utf8.RuneStart(b[end]) {
		end++
	}
	return output.Escape(string(b[:runeCut(b, head)])) + "…" + output.Escape(string(b[end:]))
}

// runeCut is the largest cut at or below n that does not split a rune.
func runeCut(b []byte, n int) int {
	for n > 0 && n < len(b) && !utf8.RuneStart(b[n]) {
		n--
	}
	return n
}
