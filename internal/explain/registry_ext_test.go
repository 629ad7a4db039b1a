package explain_test

import (
	"bytes"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/explain/explainout"
	"github.com/kscope-dev/kscope/internal/recording"
)

// TestCauseInOneFile: a cause registered from one file (registry_test.go's
// test-stall, with no other edit) is in kscope explain's summary table,
// its JSON findings and summary, the detail of the findings it names and
// its --help.
func TestCauseInOneFile(t *testing.T) {
	explain.RegisterTestCause(t)
	dir := filepath.Join(t.TempDir(), "rec")
	writeTestStallRecording(t, dir)
	var table, js bytes.Buffer
	for _, out := range []struct {
		format string
		w      *bytes.Buffer
	}{{"table", &table}, {"json", &js}} {
		w, err := explainout.NewWriter(out.w, out.format, true)
		if err != nil {
			t.Fatal(err)
		}
		explainRecording(t, dir, w)
	}
	for _, tt := range []struct {
		what string
		out  string
		want string // a regular expression
	}{
		{"the summary table", table.String(), `(?m)^test-stall +1 +50\.0% +0\.1 s +0\.1 s$`},
		{"the table's rows", table.String(), `(?m)^.* 100 ms .* test-stall +10\.0\.0\.1:40000/1$`},
		{"the finding's cause and detail", js.String(), `"correlation_id":1,.*"cause":"test-stall","explained_ms":90,.*"detail":"the test held it 90\.0 ms"`},
		{"the finding's shares", js.String(), `"shares":\{"slow_write_ms":0,.*,"request_queue_ms":0,"disk_read_ms":0,"test_stall_ms":90\}`},
		{"an unexplained finding's detail", js.String(), `"correlation_id":2,.*"detail":"no cause accounts for 50% of 100\.0 ms \(write 0\.0, .*, safepoint 0\.0, disk read 0\.0, test 0\.0 ms\)"`},
		{"the JSON summary", js.String(), `\{"cause":"safepoint","requests":0,[^}]*\},\{"cause":"test-stall","requests":1,"share":0\.5,`},
		{"--help", explain.CauseHelp("  ", 15), `(?m)^  safepoint      .*\n  test-stall     a test held it \(registered by tests only\)\n  cpu-steal `},
	} {
		if !regexp.MustCompile(tt.want).MatchString(tt.out) {
			t.Errorf("%s lacks %s:\n%s", tt.what, tt.want, tt.out)
		}
	}
}

// explainRecording explains the recording in dir into w, every request of
// 50 ms or more.
func explainRecording(t *testing.T, dir string, w explainout.Writer) {
	t.Helper()
	rec, err := explain.LoadRecording(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := explain.New(explain.Config{Slow: 50 * time.Millisecond}, rec.Index, nil)
	sum, err := e.Run(rec.Scan, explain.RunOptions{}, w.Finding)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Summary(sum); err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
}

// writeTestStallRecording writes two slow requests of 100 ms, the first
// held by test-stall, the second by nothing.
func writeTestStallRecording(t *testing.T, dir string) {
	t.Helper()
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	acks := int16(1)
	for i, client := range []string{explain.TestStallClient, "app"} {
		a := t0.Add(time.Duration(i) * time.Second)
		r := &event.Request{Arrival: a, End: a.Add(100 * time.Millisecond), LatencyMs: 100, BrokerMs: 100, Client: "10.0.0.1:40000", Broker: "10.0.0.2:9092",
			API: "Produce", APIKey: 0, APIVersion: 9, CorrelationID: int32(i + 1), ClientID: client, Acks: &acks, Answered: true,
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: 1, Bytes: 100}}}
		if err := w.Request(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&recording.Meta{Tool: "test", Start: t0, End: t0.Add(2 * time.Second)}); err != nil {
		t.Fatal(err)
	}
}
