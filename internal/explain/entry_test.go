package explain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

// recorded is what an Output was told, in order.
type recorded struct {
	calls    []string
	findings []*Finding
	sums     []*Summary
	fail     error // returned by Finding
}

func (r *recorded) Finding(f *Finding) error {
	r.calls = append(r.calls, fmt.Sprintf("finding %d", f.CorrelationID))
	r.findings = append(r.findings, f)
	return r.fail
}

func (r *recorded) Summary(s *Summary) error {
	r.calls = append(r.calls, "summary")
	r.sums = append(r.sums, s)
	return nil
}

func (r *recorded) Clocks(c *Cluster) error {
	r.calls = append(r.calls, fmt.Sprintf("clocks of %d", len(c.Recordings)))
	return nil
}

func (r *recorded) Broker(id int32, _ string) error {
	r.calls = append(r.calls, fmt.Sprintf("broker %d", id))
	return nil
}

// slowWriteRequests are ten produce requests of 10, 20, ... 100 ms on
// one connection, one after the other, each slowed by its own append.
func slowWriteRequests() ([]*event.Request, []*event.Write) {
	var reqs []*event.Request
	var writes []*event.Write
	for i := range int32(10) {
		a, lat := float64(i)*200, float64(i+1)*10
		reqs = append(reqs, req(i, a, a+lat))
		writes = append(writes, wr(7, a+0.5, a+lat-0.5, 100))
	}
	return reqs, writes
}

// writeRecording writes a recording of reqs and writes in dir.
func writeRecording(t *testing.T, dir string, meta *recording.Meta, reqs []*event.Request, writes []*event.Write) {
	t.Helper()
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := w.Request(r); err != nil {
			t.Fatal(err)
		}
	}
	for _, wr := range writes {
		if err := w.Write(wr); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(meta); err != nil {
		t.Fatal(err)
	}
}

// TestRun: every kind of input, explained at a threshold decided once.
func TestRun(t *testing.T) {
	reqs, writes := slowWriteRequests()
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	writeRecording(t, rec, &recording.Meta{Tool: "test"}, reqs, writes)
	slowLog := filepath.Join(tmp, "slowlog")
	writeRecording(t, slowLog, &recording.Meta{Tool: "test", SlowLog: &recording.SlowLog{ThresholdMs: 75}}, reqs, writes)
	filled := NewIndex()
	if err := LoadIO(filled, filepath.Join(rec, recording.WritesFile)); err != nil {
		t.Fatal(err)
	}
	requests := filepath.Join(rec, recording.RequestsFile)
	slow50 := Config{Slow: 50 * time.Millisecond}
	tests := []struct {
		name    string
		in      Input
		opts    Options
		want    []int32 // correlation ids found, in order
		from    string
		warning string
	}{
		{"a recording", Input{Dir: rec}, Options{Config: slow50}, []int32{4, 5, 6, 7, 8, 9}, "--slow", ""},
		{"a recording at its p80", Input{Dir: rec}, Options{Config: Config{Percentile: 80}}, []int32{7, 8, 9}, "p80", ""},
		{"requests and an I/O trace", Input{Requests: requests, IO: []string{filepath.Join(rec, recording.WritesFile)}}, Options{Config: slow50},
			[]int32{4, 5, 6, 7, 8, 9}, "--slow", ""},
		{"requests and an index filled", Input{Requests: requests, Index: filled}, Options{Config: slow50}, []int32{4, 5, 6, 7, 8, 9}, "--slow", ""},
		{"a slow log", Input{Dir: slowLog}, Options{}, []int32{7, 8, 9}, SlowLogFrom, ""},
		{"a slow log at a percentile given", Input{Dir: slowLog}, Options{Config: Config{Percentile: 90, PercentileGiven: true}}, []int32{8, 9}, "p90",
			slowLog + " is an agent slow-request log"},
		{"one request, whatever its latency", Input{Dir: rec}, Options{Request: &RequestID{Client: "40000", CorrelationID: 2}}, []int32{2}, "p99", ""},
		{"a request held in memory", Input{Index: indexOf(t, writes), Held: &HeldRequest{Request: reqs[3], Before: reqs[:3]}}, Options{Config: slow50},
			[]int32{3}, "--slow", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out recorded
			var warnings []string
			tt.opts.Warn = func(msg string) { warnings = append(warnings, msg) }
			if err := Run(context.Background(), []Input{tt.in}, tt.opts, &out); err != nil {
				t.Fatal(err)
			}
			var got []int32
			for _, f := range out.findings {
				got = append(got, f.CorrelationID)
				if f.Cause != CauseSlowWrite {
					t.Errorf("request %d: %s: %s", f.CorrelationID, f.Cause, f.Detail)
				}
			}
			if !slices.Equal(got, tt.want) || len(out.sums) != 1 || out.calls[len(out.calls)-1] != "summary" {
				t.Fatalf("found %v, calls %v; want %v, then a summary", got, out.calls, tt.want)
			}
			if s := out.sums[0]; s.ThresholdFrom != tt.from || s.Slow != int64(len(tt.want)) {
				t.Errorf("summary: %d slow by %s, want %d by %s", s.Slow, s.ThresholdFrom, len(tt.want), tt.from)
			}
			if w := strings.Join(warnings, "\n"); (w == "") != (tt.warning == "") || !strings.Contains(w, tt.warning) {
				t.Errorf("warnings %q, want %q", w, tt.warning)
			}
		})
	}
}

func TestRunFails(t *testing.T) {
	reqs, writes := slowWriteRequests()
	rec := filepath.Join(t.TempDir(), "rec")
	writeRecording(t, rec, &recording.Meta{Tool: "test"}, reqs, writes)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	failing := errors.New("disk full")
	tests := []struct {
		name   string
		ctx    context.Context
		inputs []Input
		opts   Options
		fail   error
		want   string
		output bool // an *OutputError
	}{
		{"nothing", context.Background(), nil, Options{}, nil, "nothing to explain", false},
		{"an input of nothing", context.Background(), []Input{{}}, Options{}, nil, "an input is", false},
		{"not a recording", context.Background(), []Input{{Dir: t.TempDir()}}, Options{}, nil, "is not a kscope recording", false},
		{"a request not there", context.Background(), []Input{{Dir: rec}}, Options{Request: &RequestID{Client: "40000", CorrelationID: 99}}, nil,
			"request 40000/99 is not in", false},
		{"one request of several recordings", context.Background(), []Input{{Dir: rec}, {Dir: rec}}, Options{Request: &RequestID{Client: "x", CorrelationID: 1}}, nil,
			"not several", false},
		{"the output fails", context.Background(), []Input{{Dir: rec}}, Options{}, failing, "writing output: disk full", true},
		{"cancelled", cancelled, []Input{{Dir: rec}}, Options{Config: Config{Slow: time.Millisecond}}, nil, context.Canceled.Error(), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(tt.ctx, tt.inputs, tt.opts, &recorded{fail: tt.fail})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one with %q", err, tt.want)
			}
			var oe *OutputError
			if errors.As(err, &oe) != tt.output {
				t.Errorf("an output error: %v, want %v", !tt.output, tt.output)
			}
		})
	}
}

// TestRunCluster: two brokers' recordings, their clocks 250 ms apart,
// explained together: the clocks first, then each broker's findings and
// summary, which names the broker and its clock.
func TestRunCluster(t *testing.T) {
	const skew = 250.0
	var at1, at2 []*event.Request
	for i := range int32(20) {
		a := float64(i) * 10
		f := ffetch(i, 2, a, 40, answered(a+3, a+3.1))
		at1 = append(at1, f)
		at2 = append(at2, seen(f, skew, a-0.05, a+3.05, a+3.15))
	}
	slow := req(100, 20, 120)
	at1 = append(at1, slow)
	tmp := t.TempDir()
	var inputs []Input
	for i, reqs := range [][]*event.Request{at1, at2} {
		dir := filepath.Join(tmp, fmt.Sprint("broker", i+1))
		id := int32(i + 1)
		writeRecording(t, dir, &recording.Meta{Tool: "test", Broker: recording.Broker{NodeID: &id}}, reqs, nil)
		inputs = append(inputs, Input{Dir: dir})
	}
	var out recorded
	if err := Run(context.Background(), inputs, Options{Config: Config{Slow: 50 * time.Millisecond}}, &out); err != nil {
		t.Fatal(err)
	}
	want := []string{"clocks of 2", "broker 1", "finding 100", "summary", "broker 2", "summary"}
	if !slices.Equal(out.calls, want) {
		t.Fatalf("calls %v, want %v", out.calls, want)
	}
	s1, s2 := out.sums[0], out.sums[1]
	if *s1.NodeID != 1 || s1.Clock != nil || *s2.NodeID != 2 || s2.Clock == nil || s2.Clock.Against != 1 {
		t.Errorf("summaries: broker %d clock %+v, broker %d clock %+v", *s1.NodeID, s1.Clock, *s2.NodeID, s2.Clock)
	}
	if d := s2.Clock.OffsetMs - skew; d > 1 || d < -1 {
		t.Errorf("broker 2's clock %+.3f ms, want %+.0f", s2.Clock.OffsetMs, skew)
	}
}

// cutLastLine cuts the last line of the file at path short, as a crash
// mid-write leaves it.
func cutLastLine(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.TrimSuffix(b, []byte("\n"))
	last := bytes.LastIndexByte(b, '\n') + 1
	if err := os.WriteFile(path, b[:last+(len(b)-last)/2], 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunLeftOut: what reading an input left out (here a last line cut
// short) is in the summary's missing evidence, and noted once as a
// warning when Run read the input itself; a caller that passes its own
// reader tells of it itself, and Run notes nothing of it.
func TestRunLeftOut(t *testing.T) {
	reqs, writes := slowWriteRequests()
	tmp := t.TempDir()
	rec := filepath.Join(tmp, "rec")
	writeRecording(t, rec, &recording.Meta{Tool: "test"}, reqs, writes)
	requests := filepath.Join(rec, recording.RequestsFile)
	cutLastLine(t, requests)
	cut := requests + ":10: the last line is cut short"

	// The caller's reader, which has read the requests already (as
	// report does): the cut line is counted once.
	callers := recording.Reader{Tally: &recording.Tally{}}
	if err := callers.Lines(requests, func([]byte, int64) error { return nil }); err != nil {
		t.Fatal(err)
	}
	filled := NewIndex()
	if err := LoadIO(filled, filepath.Join(rec, recording.WritesFile)); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		in    Input
		quiet bool
		noted bool // the cut line noted as a warning
	}{
		{"a recording", Input{Dir: rec}, false, true},
		{"a recording, quiet", Input{Dir: rec}, true, false},
		{"a requests file with an I/O trace", Input{Requests: requests, IO: []string{filepath.Join(rec, recording.WritesFile)}}, false, true},
		{"a requests file read by the caller's reader", Input{Requests: requests, Index: filled, Reader: &callers}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var notes []string
			opts := Options{Config: Config{Slow: 50 * time.Millisecond}}
			if !tt.quiet {
				opts.Note = func(msg string) { notes = append(notes, msg) }
			}
			var out recorded
			if err := Run(context.Background(), []Input{tt.in}, opts, &out); err != nil {
				t.Fatal(err)
			}
			wantNotes := 0
			if tt.noted {
				wantNotes = 1
			}
			if len(notes) != wantNotes || wantNotes == 1 && !strings.HasPrefix(notes[0], "warning: "+cut) {
				t.Errorf("notes %q, want the cut line noted %d time(s) as a warning", notes, wantNotes)
			}
			if len(out.sums) != 1 {
				t.Fatalf("%d summaries", len(out.sums))
			}
			// The recording's meta.json says what it could not record, then
			// the reader what it left out.
			s := out.sums[0]
			var wantMissing []string
			if tt.in.Dir != "" {
				meta, err := recording.ReadMeta(rec)
				if err != nil {
					t.Fatal(err)
				}
				wantMissing = meta.MissingEvidence()
			}
			wantMissing = append(wantMissing, callers.Tally.Warnings()...)
			if !slices.Equal(s.MissingEvidence, wantMissing) {
				t.Errorf("missing evidence %q, want %q", s.MissingEvidence, wantMissing)
			}
			if s.ProduceRequests != 9 || s.Slow != 5 {
				t.Errorf("%d produce requests, %d slow; want 9, 5 (the cut one left out)", s.ProduceRequests, s.Slow)
			}
		})
	}
	if w := callers.Tally.Warnings(); len(w) != 1 || !strings.HasPrefix(w[0], cut) {
		t.Errorf("the caller's tally: %q, want the cut line once", w)
	}
}

// TestRunIOStream: an I/O trace beside a requests file may be a pipe
// (--io <(kscope iotrace ...)), read once.
func TestRunIOStream(t *testing.T) {
	reqs, writes := slowWriteRequests()
	rec := filepath.Join(t.TempDir(), "rec")
	writeRecording(t, rec, &recording.Meta{Tool: "test"}, reqs, writes)
	trace, err := os.ReadFile(filepath.Join(rec, recording.WritesFile))
	if err != nil {
		t.Fatal(err)
	}
	// The whole trace in the pipe (far less than its buffer), its writer
	// gone: what a finished kscope iotrace leaves.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := w.Write(trace); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var out recorded
	in := Input{Requests: filepath.Join(rec, recording.RequestsFile), IO: []string{fmt.Sprintf("/dev/fd/%d", r.Fd())}}
	if err := Run(context.Background(), []Input{in}, Options{Config: Config{Slow: 50 * time.Millisecond}}, &out); err != nil {
		t.Fatal(err)
	}
	var got []int32
	for _, f := range out.findings {
		got = append(got, f.CorrelationID)
		if f.Cause != CauseSlowWrite {
			t.Errorf("request %d: %s: %s", f.CorrelationID, f.Cause, f.Detail)
		}
	}
	if want := []int32{4, 5, 6, 7, 8, 9}; !slices.Equal(got, want) {
		t.Errorf("found %v, want %v", got, want)
	}
}
