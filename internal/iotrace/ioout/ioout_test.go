package ioout

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
)

func sample() *event.Write {
	start := time.Date(2026, 11, 21, 21, 30, 0, 123456789, time.UTC)
	return &event.Write{Start: start, End: start.Add(301500 * time.Microsecond), LatencyMs: 301.5, TID: 77,
		Thread: "data-plane-kafk", Op: "write", Bytes: 16384, Offset: 1 << 20,
		File: "orders-3/00000000000000001234.log", Topic: "orders", Partition: 3, Dev: "7:0"}
}

func TestFormats(t *testing.T) {
	fsync := *sample()
	fsync.Op, fsync.Bytes, fsync.Offset, fsync.Error = "fsync", 0, -1, "EIO"
	tests := []struct {
		format string
		want   []string // substrings of the output, in order
	}{
		{"table", []string{"START TIME", "OFF_KB", "FILE", "301.500", "77", "data-plane-kafk", "write", "16384", "1024", "orders-3/00000000000000001234.log",
			"fsync", "EIO", "-", "orders-3"}},
		{"json", []string{`"start":"2026-11-21T21:30:00.123456789Z"`, `"latency_ms":301.5`, `"offset":1048576`, `"topic":"orders"`, `"partition":3`, `"dev":"7:0"`,
			`"op":"fsync"`, `"offset":-1`, `"error":"EIO"`}},
		{"csv", []string{"start,end,latency_ms", "2026-11-21T21:30:00.123456789Z,2026-11-21T21:30:00.424956789Z,301.500000,77,data-plane-kafk,write,16384,1048576,orders-3/00000000000000001234.log,orders,3,7:0,",
			"fsync,0,-1,orders-3/00000000000000001234.log,orders,3,7:0,EIO"}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			var buf bytes.Buffer
			w, err := NewWriter(&buf, tt.format)
			if err != nil {
				t.Fatal(err)
			}
			h := w.Handlers()
			for _, e := range []*event.Write{sample(), &fsync} {
				if err := h.Write(e); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			rest := out
			for _, s := range tt.want {
				i := strings.Index(rest, s)
				if i < 0 {
					t.Fatalf("output lacks %q (in order):\n%s", s, out)
				}
				rest = rest[i+len(s):]
			}
		})
	}
	if _, err := NewWriter(&bytes.Buffer{}, "xml"); err == nil {
		t.Error("format xml accepted")
	}
}

func TestWriteSummaries(t *testing.T) {
	s := iotrace.Summary{Topic: "orders", Partition: 3, Op: "write", Dev: "7:0", Count: 4, Bytes: 4096, Total: 4 * time.Millisecond}
	s.Slots[19] = 3 // [0.52, 1.05) ms
	s.Slots[28] = 1 // [268, 537) ms
	var buf bytes.Buffer
	if err := WriteSummaries(&buf, "json", []iotrace.Summary{s}); err != nil {
		t.Fatal(err)
	}
	var got summaryJSON
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := summaryJSON{"orders", 3, "write", "7:0", 4, 4096, 0, 1, 1.048576, 536.870912, 536.870912, 536.870912}
	if got != want {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	buf.Reset()
	if err := WriteSummaries(&buf, "table", []iotrace.Summary{s}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "MAX<=(ms)") || !strings.Contains(buf.String(), "536.871") {
		t.Errorf("table:\n%s", buf.String())
	}
}

// TestEveryTracedKindShown: every kind of event the tracer may send has
// a handler in each format, so that the table and CSV do not drop a new
// source's events without a word.
func TestEveryTracedKindShown(t *testing.T) {
	noCheck := func(event.Times) error { return nil }
	for _, format := range []string{"table", "json", "csv"} {
		w, err := NewWriter(&bytes.Buffer{}, format)
		if err != nil {
			t.Fatal(err)
		}
		h := w.Handlers()
		for _, k := range iotrace.Kinds() {
			// A kind's Reader is nil when h has no handler for it.
			if k.Reader(&h, noCheck) == nil {
				t.Errorf("%s: no handler for %q", format, k.Names())
			}
		}
	}
}
