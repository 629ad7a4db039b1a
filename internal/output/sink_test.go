package output

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// failingWriter fails every write after the first n bytes.
type failingWriter struct{ n int }

var errDiskFull = errors.New("disk full")

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.n {
		return 0, errDiskFull
	}
	f.n -= len(p)
	return len(p), nil
}

func TestRequestSink(t *testing.T) {
	fast := sample()
	fast.CorrelationID, fast.LatencyMs, fast.End = 1, 2, fast.Arrival.Add(2*time.Millisecond)
	slow := sample() // 538 ms
	for _, c := range []struct {
		name       string
		format     string
		filter     event.RequestFilter
		summaryTop int
		want       []string // in the output
		notWant    []string
	}{
		{name: "rows, all", format: "csv", want: []string{",4711,", ",1,"}},
		{name: "rows, slow only", format: "csv", filter: event.RequestFilter{Slow: 100 * time.Millisecond}, want: []string{",4711,"}, notWant: []string{",1,"}},
		{name: "rows, another topic", format: "csv", filter: event.RequestFilter{Topics: []string{"other"}}, notWant: []string{",4711,", ",1,"}},
		{name: "summary", format: "no format needed", summaryTop: 1, want: []string{"Produce", "538"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			s, err := NewRequestSink(&buf, c.format, c.filter, c.summaryTop)
			if err != nil {
				t.Fatal(err)
			}
			s.Add(fast)
			s.Add(slow)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(buf.String(), w) {
					t.Errorf("%q missing from:\n%s", w, buf.String())
				}
			}
			for _, w := range c.notWant {
				if strings.Contains(buf.String(), w) {
					t.Errorf("%q in:\n%s", w, buf.String())
				}
			}
		})
	}
}

func TestRequestSinkErrors(t *testing.T) {
	if _, err := NewRequestSink(&bytes.Buffer{}, "xml", event.RequestFilter{}, 0); err == nil {
		t.Error("unknown format accepted")
	}
	for _, top := range []int{0, 3} {
		s, err := NewRequestSink(&failingWriter{n: 10}, "json", event.RequestFilter{}, top)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			s.Add(sample())
		}
		if err := s.Close(); !errors.Is(err, errDiskFull) {
			t.Errorf("top %d: Close = %v, want the write error", top, err)
		}
	}
}
