package cli

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
	"github.com/kscope-dev/kscope/internal/testkit/comparetest"
)

// hostile is a part of a file name that would turn a terminal's text red
// and send its cursor back to the start of the line.
const hostile = "ev\x1b[31mil\rname"

// TestPrintedNamesEscaped gives every command that takes files names with
// control characters, as files that work, files that are damaged and
// files that are missing: neither stdout nor stderr may carry the raw
// bytes, and where the name is printed it is escaped (\x1b, \x0d; where
// an error quoted it with %q before it was escaped, \\x1b).
func TestPrintedNamesEscaped(t *testing.T) {
	f := makeHostileFiles(t)
	cases := []struct {
		name  string
		args  []string
		named bool // the output names the file
	}{
		{"requests", []string{"requests", f.capture}, false},
		{"requests truncated", []string{"requests", f.cutCapture}, true},
		{"requests not a capture", []string{"requests", f.text}, true},
		{"requests missing", []string{"requests", f.missing}, true},
		{"requests --tls-keylog", []string{"requests", "--tls-keylog", f.missing, f.capture}, true},
		{"requests --log-dirs", []string{"requests", "--log-dirs", f.missing, f.capture}, true},
		{"report", []string{"report", f.recording, "-o", f.out}, true},
		{"report --pcap", []string{"report", "--pcap", f.cutCapture, "-o", f.out}, true},
		{"report missing", []string{"report", f.missing, "-o", f.out}, true},
		{"explain", []string{"explain", f.recording}, false},
		{"explain two recordings", []string{"explain", f.recording, f.recording2}, true},
		{"explain missing", []string{"explain", f.missing}, true},
		{"explain --jfr", []string{"explain", f.recording, "--jfr", f.missing}, true},
		{"explain --pcap --io", []string{"explain", "--pcap", f.cutCapture, "--io", f.missing}, true},
		{"segment dump", []string{"segment", "dump", f.segment, f.segmentIndex}, true},
		{"segment dump truncated", []string{"segment", "dump", f.cutSegment}, true},
		{"segment dump missing", []string{"segment", "dump", f.missing}, true},
		{"segment verify", []string{"segment", "verify", f.segmentDir}, true},
		{"segment verify damaged", []string{"segment", "verify", f.cutSegment}, true},
		{"segment lookup", []string{"segment", "lookup", f.segment, "--position", "0", "--bytes", "100"}, false},
		{"segment lookup missing", []string{"segment", "lookup", f.missing, "--position", "0", "--bytes", "100"}, true},
		{"bench compare", []string{"bench", "compare", f.result, f.result2}, true},
		{"bench compare missing", []string{"bench", "compare", f.result, f.missing}, true},
		{"bench report", []string{"bench", "report", f.result}, true},
		{"bench report missing", []string{"bench", "report", f.missing}, true},
		{"profile --jfr missing", []string{"profile", "--jfr", f.missing}, true},
		{"profile --jfr not JFR", []string{"profile", "--jfr", f.text}, true},
		{"model --from-capture", []string{"model", "--from-capture", f.cutCapture}, true},
		{"model --from-capture missing", []string{"model", "--from-capture", f.missing}, true},
		{"lab fs --workload", []string{"lab", "fs", "--workload", f.missing}, true},
		{"lab versions --workload", []string{"lab", "versions", "--kafka", "3.9.1,4.1.1", "--workload", f.missing}, true},
		{"clients", []string{"clients", f.capture}, false},
		{"clients truncated", []string{"clients", f.cutCapture}, true},
		{"clients recording", []string{"clients", f.recording}, false},
		{"clients missing", []string{"clients", f.missing}, true},
		{"clients --target-version", []string{"clients", "--target-version", hostile, f.capture}, true},
		{"a flag value", []string{"requests", "--api", hostile, f.capture}, true},
		{"an argument", []string{hostile}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errOut := run(t, c.args...)
			for stream, text := range map[string]string{"stdout": out, "stderr": errOut} {
				if i := strings.IndexAny(text, "\x1b\r"); i >= 0 {
					t.Errorf("exit %d: raw control byte in %s: %q", code, stream, text[max(0, i-80):min(len(text), i+40)])
				}
			}
			if c.named && !strings.Contains(out+errOut, `x1b[31mil`) {
				t.Errorf("exit %d: the name is not printed escaped:\nstdout: %.300q\nstderr: %.300q", code, out, errOut)
			}
		})
	}
}

// hostileFiles are inputs of every kind, named with hostile.
type hostileFiles struct {
	capture, cutCapture, text, missing, out       string
	recording, recording2                         string
	segmentDir, segment, segmentIndex, cutSegment string
	result, result2                               string
}

func makeHostileFiles(t *testing.T) hostileFiles {
	t.Helper()
	dir := t.TempDir()
	name := func(s string) string { return filepath.Join(dir, strings.ReplaceAll(s, "*", hostile)) }
	f := hostileFiles{capture: name("cap*.pcapng"), cutCapture: name("cut*.pcapng"), text: name("notes*.txt"),
		missing: name("missing*"), out: name("out*.html"), recording: name("rec*"), recording2: name("rec2*"),
		segmentDir: name("t*-0"), result: name("a*.json"), result2: name("b*.json")}
	capture := readFile(t, realCapture)
	writeFile(t, f.capture, capture)
	writeFile(t, f.cutCapture, capture[:len(capture)/2])
	writeFile(t, f.text, []byte("just some text, not packets"))
	writeSlowLog(t, f.recording)
	writeSlowLog(t, f.recording2)
	if err := os.CopyFS(f.segmentDir, os.DirFS(txnDir)); err != nil {
		t.Fatal(err)
	}
	f.segment = filepath.Join(f.segmentDir, "00000000000000000000.log")
	f.segmentIndex = filepath.Join(f.segmentDir, "00000000000000000000.index")
	f.cutSegment = filepath.Join(dir, "cut"+hostile+"-0", "00000000000000000000.log")
	if err := os.MkdirAll(filepath.Dir(f.cutSegment), 0o755); err != nil {
		t.Fatal(err)
	}
	seg := readFile(t, txnSegment)
	writeFile(t, f.cutSegment, seg[:len(seg)-30])
	for p, seed := range map[string]uint64{f.result: 1, f.result2: 2} {
		data, err := json.Marshal(comparetest.Result(benchSpec(seed)))
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, data)
	}
	return f
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRecordingNamesEscaped: a recording is a file handed over like any
// other; the device and journal names in it reach the tables of explain
// escaped.
func TestRecordingNamesEscaped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(ms float64) time.Time { return t0.Add(time.Duration(ms * float64(time.Millisecond))) }
	for i := range 40 {
		a, lat := float64(i*500), 2.0
		if i%2 == 1 {
			lat = 60 + float64(i*5)
		}
		r := &event.Request{Arrival: at(a), End: at(a + lat), LatencyMs: lat, BrokerMs: lat, Client: "10.0.0.1:40000",
			API: "Produce", APIVersion: 11, CorrelationID: int32(i), Answered: true,
			Partitions: []event.Partition{{Topic: "t", Partition: 0, Records: 1, Bytes: 100 + i}}}
		wr := &event.Write{Start: at(a + 0.5), End: at(a + lat - 1), LatencyMs: lat - 1.5, TID: 7, Thread: "data-plane-kafk",
			Op: "write", Bytes: int64(100 + i), Offset: int64(i * 200), File: "t-0/00000000000000000000.log", Topic: "t", Dev: hostile}
		c := &event.JournalCommit{Kind: hostile, Start: at(a + 0.5), End: at(a + lat - 1), LatencyMs: lat - 1.5, Dev: hostile, FS: "ext4"}
		if err := errors.Join(w.Request(r), w.Write(wr), w.Commit(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&recording.Meta{Tool: "test", Start: t0, End: at(20000)}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args  []string
		named bool // the output shows the device
	}{{[]string{"explain", dir}, true}, {[]string{"explain", dir, "--request", "40000/1"}, false}} {
		code, out, errOut := run(t, c.args...)
		if code != ExitOK {
			t.Fatalf("%q: exit %d: %s", c.args, code, errOut)
		}
		if i := strings.IndexAny(out+errOut, "\x1b\r"); i >= 0 || c.named && !strings.Contains(out, `\x1b[31mil\x0dname`) {
			t.Errorf("%q: raw control bytes (at %d), or the device not printed escaped:\n%s", c.args, i, out)
		}
	}
}
