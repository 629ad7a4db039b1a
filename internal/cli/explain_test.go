package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

func TestExplainAndRecordBadInput(t *testing.T) {
	dir := t.TempDir()
	tests := [][]string{
		{"explain"},
		{"explain", dir},                // not a recording
		{"explain", "--pcap", "x.pcap"}, // no --io
		{"explain", dir, "--pcap", "x.pcap", "--io", "y"}, // both
		{"explain", dir, "--share", "2"},
		{"explain", dir, "--request", "nocorr"},
		{"explain", dir, "--format", "csv"},
		{"explain", dir, "--api", "metadata"},
		{"explain", dir, dir, "--api", "fetch"}, // one recording
		{"record"},                              // no --out
		{"record", "--out", dir, "--pid", "x"},
		{"record", "--out", dir, "--port", "70000"},
	}
	for _, args := range tests {
		var out, errOut bytes.Buffer
		if code := Main(args, &out, &errOut); code != ExitBadInput {
			t.Errorf("%v: exit %d, want %d: %s", args, code, ExitBadInput, errOut.String())
		}
		if strings.Count(strings.TrimSpace(errOut.String()), "\n") != 0 {
			t.Errorf("%v: error is not one line: %q", args, errOut.String())
		}
	}
}

// TestExplainRecording runs explain over a small hand-made recording: the
// command wiring, the table, the summary and a timeline.
func TestExplainRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for i := range 200 {
		a := float64(i * 10)
		lat := 2.0
		if i == 100 {
			lat = 300
		}
		w.Request(&event.Request{Arrival: at(a), End: at(a + lat), LatencyMs: lat, BrokerMs: lat, Client: "127.0.0.1:40000",
			API: "Produce", APIKey: 0, APIVersion: 11, CorrelationID: int32(i), Answered: true,
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: 1, Bytes: 100 + i, MessageIDs: []string{"m"}}}})
		wlat := 0.1
		if i == 100 {
			wlat = 295
		}
		w.Write(&event.Write{Start: at(a + 1), End: at(a + 1 + wlat), LatencyMs: wlat, TID: 7, Thread: "data-plane-kafk", Op: "write",
			Bytes: int64(100 + i), Offset: int64(i * 100), File: "t-0/00000000000000000000.log", Topic: "t", Partition: 0, Dev: "7:0"})
	}
	if err := w.Close(&recording.Meta{Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"explain", dir}, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"slow-write", "t-0/00000000000000000000.log", "127.0.0.1:40000/100", "STALLS", "SLOW APPENDS: 1"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := Main([]string{"explain", dir, "--request", "40000/100"}, &out, &errOut); code != ExitOK {
		t.Fatalf("--request: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "cause: slow-write") {
		t.Errorf("timeline:\n%s", out.String())
	}
	out.Reset()
	errOut.Reset()
	if code := Main([]string{"explain", dir, "--request", "40000/999"}, &out, &errOut); code != ExitBadInput {
		t.Errorf("unknown request: exit %d: %s", code, errOut.String())
	}
}

// TestExplainFetchRecording: explain --api fetch over a hand-made
// recording: consumer fetches waiting for data are not slow; the one the
// broker held 300 ms with its data there is, and its timeline shows the
// split.
func TestExplainFetchRecording(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	replica := int32(-1)
	for i := range 20 {
		a, lat, off, hwm, bytes := float64(i*600), 501.0, int64(100), int64(100), 0
		if i == 10 { // behind: the last response said the data was there
			lat, hwm, bytes = 300, 5000, 1000
		}
		if i == 9 {
			lat, hwm, bytes = 2, 5000, 0
		}
		w.Request(&event.Request{Arrival: at(a), End: at(a + lat), LatencyMs: lat, BrokerMs: lat, ResponseMs: 0.5, Client: "127.0.0.1:41000",
			API: "Fetch", APIKey: 1, APIVersion: 12, CorrelationID: int32(i), ClientID: "reader", ReplicaID: &replica, Answered: true,
			Fetch:      event.FetchParams{MaxWaitMs: 500, MinBytes: 1},
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Bytes: bytes, FetchOffset: &off, HighWatermark: &hwm}}})
	}
	if err := w.Close(&recording.Meta{Tool: "test"}); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if code := Main([]string{"explain", dir, "--api", "fetch", "--slow", "100ms"}, &out, &errOut); code != ExitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"20 answered consumer fetches; slow beyond their purgatory: >= 100.0 ms (--slow): 1 fetches", "127.0.0.1:41000/10"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	if code := Main([]string{"explain", dir, "--api", "fetch", "--request", "41000/10"}, &out, &errOut); code != ExitOK {
		t.Fatalf("--request: exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(out.String(), "request arrives: Fetch v12") || !strings.Contains(out.String(), "split: purgatory 0.0 ms, other wait 299.5 ms") {
		t.Errorf("timeline:\n%s", out.String())
	}
}
