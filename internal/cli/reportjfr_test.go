package cli

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

// TestReportJFRAddsAsExplain: --jfr on a recording with lock waits of its
// own is read besides them by report, as by explain (it replaced them in
// report before).
func TestReportJFRAddsAsExplain(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := recording.Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	if err := w.LockWait(&event.LockWait{Start: now, End: now.Add(time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(&recording.Meta{Start: now, End: now.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	jfrFile := filepath.Join(t.TempDir(), "broker.jfr")
	o := reportOptions{}
	o.jfrFile = jfrFile
	in, _, cleanup, err := o.inputs(io.Discard, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	if in.LockWaits != filepath.Join(dir, recording.LockWaitsFile) || in.JFR != jfrFile {
		t.Errorf("report reads lock waits %q and JFR %q; want the recording's %s and --jfr's %s", in.LockWaits, in.JFR, recording.LockWaitsFile, jfrFile)
	}
	eo := explainOptions{}
	eo.jfrFile = jfrFile
	inputs, _, err := eo.inputs(io.Discard, []string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if inputs[0].JFR != jfrFile || inputs[0].LockWaits != "" || inputs[0].Dir != dir {
		t.Errorf("explain's input %+v: want the recording (its lock waits) and --jfr", inputs[0])
	}
}
