package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
)

// slowestProduce decodes the real capture and returns its slowest
// answered produce request.
func slowestProduce(t *testing.T) *event.Request {
	t.Helper()
	code, out, errOut := run(t, "requests", "--format", "json", "--api", "produce", "-q", realCapture)
	if code != ExitOK {
		t.Fatalf("requests: exit %d: %s", code, errOut)
	}
	var slowest *event.Request
	for line := range strings.Lines(out) {
		var r event.Request
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if r.Answered && len(r.Partitions) > 0 && (slowest == nil || r.LatencyMs > slowest.LatencyMs) {
			slowest = &r
		}
	}
	if slowest == nil {
		t.Fatal("no answered produce request in the capture")
	}
	return slowest
}

// writeIOTrace writes what 'kscope iotrace --format json' would print
// around the capture's slowest request: an append to its partition, under
// a jbd2 commit, in progress for most of the time the request waited
// (queued behind the requests before it on its connection), and a fast
// append of another partition.
func writeIOTrace(t *testing.T, path string, r *event.Request) {
	t.Helper()
	p := r.Partitions[0]
	ws := r.Arrival.Add(time.Millisecond)
	wd := time.Duration((r.LatencyMs - 3) * float64(time.Millisecond))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	j := output.NewJSONLines(f)
	file := fmt.Sprintf("%s-%d/00000000000000000000.log", p.Topic, p.Partition)
	for _, e := range []any{
		&event.Write{Start: ws, End: ws.Add(wd), LatencyMs: float64(wd) / 1e6, TID: 42, Thread: "data-plane-kafk", Op: "write",
			Bytes: int64(p.Bytes), Offset: 4096, File: file, Topic: p.Topic, Partition: p.Partition, Dev: "7:3"},
		&event.JournalCommit{Kind: event.KindJBD2Commit, Start: ws, End: ws.Add(wd), LatencyMs: float64(wd) / 1e6, Dev: "7:3", FS: "ext4", TID: 9},
		&event.Write{Start: ws.Add(-time.Second), End: ws.Add(-time.Second + 50*time.Microsecond), LatencyMs: 0.05, TID: 43,
			Thread: "data-plane-kafk", Op: "write", Bytes: 100, File: "other-0/00000000000000000000.log", Topic: "other", Dev: "7:3"},
	} {
		if err := j.Encode(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReportCaptures(t *testing.T) {
	tmp := t.TempDir()
	slowest := slowestProduce(t)
	ioFile := filepath.Join(tmp, "iotrace.jsonl")
	writeIOTrace(t, ioFile, slowest)
	slowRow := fmt.Sprintf("%s/%d", slowest.Client, slowest.CorrelationID)

	cases := []struct {
		name   string
		args   []string
		want   []string // in the page
		reject []string // not in the page
	}{
		{name: "without --io", args: []string{"--pcap", realCapture},
			want: []string{`id="no-io-trace"`, "No I/O trace given.", "produce-lz4-and-ids.pcapng", "kscope report: produce-lz4-and-ids.pcapng",
				"<td>unexplained</td>"},
			reject: []string{"writes-heatmap-0", "I/O trace <code>"}},
		{name: "with --io", args: []string{"--pcap", realCapture, "--io", ioFile},
			want:   []string{"writes-heatmap-0", "commits-heatmap-0", `id="commits"`, "I/O trace <code>", "<td>lock-wait</td>"},
			reject: []string{`id="no-io-trace"`, "<td>unexplained</td>"}},
		{name: "title", args: []string{"--pcap", realCapture, "--title", "<b>mine</b>"}, want: []string{"&lt;b&gt;mine&lt;/b&gt;"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(tmp, strings.ReplaceAll(c.name, " ", "_")+".html")
			code, _, errOut := run(t, append([]string{"report", "-o", out}, c.args...)...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			// Every page: the heatmap drawn, the slowest requests listed
			// with the capture's slowest first.
			for _, w := range append([]string{`<svg`, `id="produce-heatmap"`, `id="slowest"`, slowRow}, c.want...) {
				if !strings.Contains(page, w) {
					t.Errorf("the page lacks %q", w)
				}
			}
			for _, w := range c.reject {
				if strings.Contains(page, w) {
					t.Errorf("the page has %q", w)
				}
			}
		})
	}
}

func TestReportBadInput(t *testing.T) {
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	writeSlowLog(t, rec)
	out := filepath.Join(tmp, "r.html")
	tests := []struct {
		name string
		args []string
	}{
		{"neither DIR nor --pcap", []string{"report", "-o", out}},
		{"both", []string{"report", rec, "--pcap", realCapture, "-o", out}},
		{"no -o", []string{"report", rec}},
		{"no -o with --pcap", []string{"report", "--pcap", realCapture}},
		{"--io with DIR", []string{"report", rec, "--io", "x.jsonl", "-o", out}},
		{"not a recording", []string{"report", tmp, "-o", out}},
		{"missing capture", []string{"report", "--pcap", filepath.Join(tmp, "none.pcap"), "-o", out}},
		{"missing --io", []string{"report", "--pcap", realCapture, "--io", filepath.Join(tmp, "none.jsonl"), "-o", out}},
		{"bad percentile", []string{"report", rec, "--percentile", "0", "-o", out}},
		{"bad columns", []string{"report", rec, "--columns", "1", "-o", out}},
	}
	for _, c := range tests {
		t.Run(c.name, func(t *testing.T) {
			code, _, errOut := run(t, c.args...)
			if code != ExitBadInput {
				t.Errorf("exit %d, want %d: %s", code, ExitBadInput, errOut)
			}
			if strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
				t.Errorf("error is not one line: %q", errOut)
			}
		})
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a report was written")
	}
}

// writeSlowLog writes an agent slow-request log: 20 produce requests of
// 60–250 ms (the slow ones, threshold 50 ms) and 20 context requests of
// 2 ms, each slow request on its own append.
func writeSlowLog(t *testing.T, dir string) {
	t.Helper()
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for i := range 40 {
		a := float64(i * 500)
		lat := 2.0
		if i%2 == 1 {
			lat = 60 + float64(i*5)
		}
		if err := w.Request(&event.Request{Arrival: at(a), End: at(a + lat), LatencyMs: lat, BrokerMs: lat, Client: "10.0.0.1:40000",
			Broker: "10.0.0.2:9092", API: "Produce", APIVersion: 11, CorrelationID: int32(i), Answered: true,
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: 1, Bytes: 100 + i}}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Write(&event.Write{Start: at(a + 0.5), End: at(a + lat - 1), LatencyMs: lat - 1.5, TID: 7, Thread: "data-plane-kafk",
			Op: "write", Bytes: int64(100 + i), Offset: int64(i * 200), File: "t-0/00000000000000000000.log", Topic: "t", Dev: "7:0"}); err != nil {
			t.Fatal(err)
		}
	}
	meta := &recording.Meta{Tool: "test", Host: "broker-1", Start: t0, End: at(20000),
		SlowLog: &recording.SlowLog{ThresholdMs: 50, APIs: []string{"Produce"}, ContextRequests: 20, Dropped: 3}}
	if err := w.Close(meta); err != nil {
		t.Fatal(err)
	}
}

// TestSlowLogThreshold: a recording that is an agent's slow-request log
// is judged by the agent's threshold, in explain and in report, unless
// --slow or --percentile say otherwise.
func TestSlowLogThreshold(t *testing.T) {
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	writeSlowLog(t, rec)
	const warning = "is an agent slow-request log"
	cases := []struct {
		name    string
		args    []string
		want    string // in the output (explain) or the page (report)
		warning bool
	}{
		{name: "explain: the slow log's threshold", args: []string{"explain", rec, "--summary"},
			want: ">= 50.0 ms (agent slow log): 20 requests"},
		{name: "explain: --slow", args: []string{"explain", rec, "--summary", "--slow", "200ms"},
			want: ">= 200.0 ms (--slow): 6 requests"},
		{name: "explain: --percentile", args: []string{"explain", rec, "--summary", "--percentile", "99"},
			want: "(p99): 1 requests", warning: true},
		{name: "report: the slow log's threshold", args: []string{"report", rec},
			want: "20 of 40 answered produce requests were at or above 50.0 ms (agent slow log)"},
		{name: "report: --slow", args: []string{"report", rec, "--slow", "200ms"},
			want: "6 of 40 answered produce requests were at or above 200.0 ms (--slow)"},
		{name: "report: --percentile", args: []string{"report", rec, "--percentile", "90"},
			want: "5 of 40 answered produce requests were at or above 215.0 ms (p90)", warning: true},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := c.args
			page := filepath.Join(tmp, fmt.Sprintf("r%d.html", i))
			if args[0] == "report" {
				args = append(args, "-o", page)
			}
			code, out, errOut := run(t, args...)
			if code != ExitOK {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if args[0] == "report" {
				b, err := os.ReadFile(page)
				if err != nil {
					t.Fatal(err)
				}
				out = string(b)
				for _, w := range []string{`id="slow-log"`, "requests of 50 ms and more (Produce)", "20 requests kept because", "3 slow requests were dropped"} {
					if !strings.Contains(out, w) {
						t.Errorf("the page lacks %q", w)
					}
				}
			}
			if !strings.Contains(out, c.want) {
				t.Errorf("output lacks %q:\n%s", c.want, out)
			}
			if got := strings.Contains(errOut, warning); got != c.warning {
				t.Errorf("warning on stderr: %v, want %v: %q", got, c.warning, errOut)
			}
		})
	}
}

// TestReportRecordingWithoutSlowLog: a plain recording keeps the
// percentile and says nothing of slow logs.
func TestReportRecordingWithoutSlowLog(t *testing.T) {
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	writeSlowLog(t, rec)
	meta, err := recording.ReadMeta(rec)
	if err != nil {
		t.Fatal(err)
	}
	meta.SlowLog = nil
	if err := recording.WriteMeta(rec, meta); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(tmp, "r.html")
	var stdout, stderr bytes.Buffer
	if code := Main([]string{"report", rec, "-o", out}, &stdout, &stderr); code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, w := range []string{"(p99)", "Recording <code>", "broker-1", "writes-heatmap-0"} {
		if !strings.Contains(page, w) {
			t.Errorf("the page lacks %q", w)
		}
	}
	for _, w := range []string{`id="slow-log"`, `id="no-io-trace"`} {
		if strings.Contains(page, w) {
			t.Errorf("the page has %q", w)
		}
	}
}
