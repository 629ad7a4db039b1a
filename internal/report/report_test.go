package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

func TestScaleRows(t *testing.T) {
	s := Scale{PerDecade: 10}
	if got := s.Rows(); got != 55 { // log10(30 s / 100 µs) = 5.48 decades
		t.Fatalf("rows = %d, want 55", got)
	}
	for _, c := range []struct {
		ms  float64
		row int
	}{{0.01, 0}, {0.1, 0}, {0.125, 0}, {0.13, 1}, {1, 10}, {1.01, 10}, {10, 20}, {999, 39}, {1000, 40}, {30000, 54}, {1e9, 54}} {
		if got := s.Row(c.ms); got != c.row {
			t.Errorf("Row(%v) = %d, want %d", c.ms, got, c.row)
		}
	}
	if lo := s.Lower(10); lo < 0.9999 || lo > 1.0001 {
		t.Errorf("Lower(10) = %v, want 1", lo)
	}
}

func TestHeatmapColumnsMerge(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := NewHeatmap(Scale{PerDecade: 10}, time.Time{}, time.Second, 4)
	for i := range 4 {
		h.Add(t0.Add(time.Duration(i)*time.Second+time.Millisecond), 1)
	}
	if len(h.Cols) != 4 || h.Step != time.Second || !h.Origin.Equal(t0) {
		t.Fatalf("cols %d step %v origin %v", len(h.Cols), h.Step, h.Origin)
	}
	h.Add(t0.Add(4*time.Second), 100) // a fifth column: merged to 2 s columns
	if h.Step != 2*time.Second || len(h.Cols) != 3 {
		t.Fatalf("after merge: step %v cols %d", h.Step, len(h.Cols))
	}
	if h.Cols[0][10] != 2 || h.Cols[1][10] != 2 || h.Cols[2][30] != 1 || h.Total != 5 {
		t.Fatalf("counts: %v %v %v", h.Cols[0][10], h.Cols[1][10], h.Cols[2][30])
	}
	// Out of order before the origin: prepended.
	h.Add(t0.Add(-time.Second), 0.5)
	if !h.Origin.Equal(t0.Add(-2*time.Second)) || len(h.Cols) != 4 || h.Cols[0][h.Scale.Row(0.5)] != 1 {
		t.Fatalf("prepend: origin %v cols %d", h.Origin, len(h.Cols))
	}
	// Far away in time: still bounded.
	h.Add(t0.Add(24*time.Hour), 1)
	if len(h.Cols) > 4 {
		t.Fatalf("cols %d > max 4", len(h.Cols))
	}
	if h.Total != 7 {
		t.Fatalf("total %d", h.Total)
	}
}

func TestQuantile(t *testing.T) {
	h := NewHeatmap(PercentileScale, time.Time{}, time.Second, 10)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for range 990 {
		h.Add(t0, 1)
	}
	for range 10 {
		h.Add(t0, 500)
	}
	p50, _ := h.Quantile(0, 0.5)
	p999, _ := h.Quantile(0, 0.999)
	if p50 < 0.95 || p50 > 1.07 || p999 < 470 || p999 > 530 {
		t.Fatalf("p50 %v p99.9 %v", p50, p999)
	}
}

// writeRecording makes a small recording: 300 produce requests over 3 s
// at 1 ms, with a 400 ms write stall at 1.5 s, and a hostile client id.
func writeRecording(t *testing.T, dir string) {
	t.Helper()
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range 300 {
		arr := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		ws := arr.Add(200 * time.Microsecond)
		wd := 100 * time.Microsecond
		if i == 150 {
			wd = 400 * time.Millisecond
		}
		end := ws.Add(wd + 500*time.Microsecond)
		acks := int16(1)
		r := &event.Request{Arrival: arr, End: end, LatencyMs: float64(end.Sub(arr)) / 1e6, BrokerMs: float64(end.Sub(arr)) / 1e6,
			Client: fmt.Sprintf("10.0.0.1:%d", 40000+i%3), Broker: "10.0.0.2:9092", API: "Produce", APIVersion: 9, CorrelationID: int32(i),
			ClientID: "<script>alert(1)</script>", Acks: &acks, Answered: true,
			Partitions: []event.Partition{{Topic: "orders", Partition: int32(i % 2), Records: 1, Bytes: 100}}}
		if err := w.Request(r); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&event.Write{Start: ws, End: ws.Add(wd), LatencyMs: float64(wd) / 1e6, TID: 7, Thread: "data-plane", Op: "write",
			Bytes: 100, Offset: int64(i/2) * 100, File: fmt.Sprintf("orders-%d/00000000000000000000.log", i%2), Topic: "orders",
			Partition: int32(i % 2), Dev: "7:3"}); err != nil {
			t.Fatal(err)
		}
		if i%100 == 50 {
			if err := w.Commit(&event.JournalCommit{Kind: event.KindJBD2Commit, Start: ws.Add(-time.Millisecond), End: ws.Add(wd + time.Millisecond),
				LatencyMs: float64(wd+2*time.Millisecond) / 1e6, Dev: "7:3", FS: "ext4", TID: uint32(i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// A consumer's fetches, each waiting max_wait_ms for data.
	for i := range 3 {
		arr := t0.Add(time.Duration(i) * 600 * time.Millisecond)
		end := arr.Add(501 * time.Millisecond)
		off, replica := int64(7), int32(-1)
		if err := w.Request(&event.Request{Arrival: arr, End: end, LatencyMs: 501, BrokerMs: 501, ResponseMs: 1, Client: "10.0.0.3:41000",
			Broker: "10.0.0.2:9092", API: "Fetch", APIKey: 1, APIVersion: 12, CorrelationID: int32(i), ClientID: "<i>reader</i>",
			ReplicaID: &replica, Answered: true, Fetch: event.FetchParams{MaxWaitMs: 500, MinBytes: 1},
			Partitions: []event.Partition{{Topic: "orders", FetchOffset: &off, HighWatermark: &off}}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&recording.Meta{Tool: "test", Host: "<b>host</b>", Start: t0, End: t0.Add(3 * time.Second)}); err != nil {
		t.Fatal(err)
	}
}

func TestReportHTML(t *testing.T) {
	dir := t.TempDir() + "/rec"
	writeRecording(t, dir)
	d, err := Build(dir, Options{Top: 10})
	if err != nil {
		t.Fatal(err)
	}
	if d.Produce.Total != 300 || len(d.Devices) != 1 || d.Devices[0].Writes.Total != 300 || len(d.Commits) != 3 {
		t.Fatalf("produce %d devices %d commits %d", d.Produce.Total, len(d.Devices), len(d.Commits))
	}
	if len(d.Slowest) == 0 || d.Slowest[0].CorrelationID != 150 || d.Slowest[0].Cause != "slow-write" {
		t.Fatalf("slowest: %+v", d.Slowest)
	}
	var b bytes.Buffer
	if err := WriteHTML(&b, d); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	if strings.Contains(page, "<script>alert(1)</script>") || strings.Contains(page, "<b>host</b>") || strings.Contains(page, "<i>reader</i>") {
		t.Fatal("recording strings are not escaped")
	}
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatal("the client id is missing")
	}
	if regexp.MustCompile(`(?i)<script`).MatchString(page) {
		t.Fatal("the page has a script element")
	}
	for _, m := range regexp.MustCompile(`(?i)\b(src|href|xlink:href|action|srcset)\s*=\s*["']?([^"'\s>]*)`).FindAllStringSubmatch(page, -1) {
		t.Errorf("the page refers to %s=%q", m[1], m[2])
	}
	if regexp.MustCompile(`(?i)(https?:)?//[a-z0-9]`).MatchString(strings.ReplaceAll(page, "http-equiv", "")) {
		t.Error("the page has a URL")
	}
	if regexp.MustCompile(`(?i)url\(|@import`).MatchString(page) {
		t.Error("the page's CSS loads something")
	}
	for _, id := range []string{ProduceHeatmapID, PercentilesID, CausesID, "writes-heatmap-0", "commits-heatmap-0", `id="slowest"`, `id="commits"`, `id="fetch-latency-table"`} {
		if !strings.Contains(page, id) {
			t.Errorf("no %s", id)
		}
	}
	if !strings.Contains(page, `fill="`+HeatColors[len(HeatColors)-1]+`"`) {
		t.Error("no cell in the fullest color")
	}
}
