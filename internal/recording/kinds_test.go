package recording

import (
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// probeFields are those of kinds of event this package has never heard
// of, made here as a new source would make its own in package event: a
// type and one NewKind.
type probeFields = struct {
	Kind      string    `json:"kind"`
	Start     time.Time `json:"start"`
	End       time.Time `json:"end"`
	LatencyMs float64   `json:"latency_ms"`
	Note      string    `json:"note"`
}

// Two kinds of it, one per stream with a file of its own: each kind has
// its own type.
type (
	probeEvent   probeFields
	journalProbe probeFields
	schedProbe   probeFields
)

var (
	probeJournal = event.NewKind(event.StreamJournal, func(p *journalProbe) event.Times { return probeTimes((*probeEvent)(p)) }, "probe_journal")
	probeSched   = event.NewKind(event.StreamSched, func(p *schedProbe) event.Times { return probeTimes((*probeEvent)(p)) }, "probe_sched")
)

func probeTimes(p *probeEvent) event.Times {
	return event.Times{Field: "latency_ms", Start: p.Start, End: p.End, Ms: p.LatencyMs, Length: true}
}

// TestNewKindRecorded: a kind of event made with event.NewKind, and
// nothing else, is written by a Writer's Handlers to its stream's file,
// listed in meta.json, and read back by ReadIO, its times checked
// against the window like any other kind's.
func TestNewKindRecorded(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T)
	}{
		{"journal stream", func(t *testing.T) { roundTrip(t, probeJournal, "probe_journal", JournalFile) }},
		{"sched stream", func(t *testing.T) { roundTrip(t, probeSched, "probe_sched", SchedFile) }},
	} {
		t.Run(tc.name, tc.run)
	}
}

// roundTrip writes events of kind (named name) to a recording, and
// checks they are read back from file, less one whose latency is
// negative.
func roundTrip[T ~probeFields](t *testing.T, kind *event.KindOf[T], name, file string) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "rec")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := w.Handlers()
	write := kind.Handler(&h)
	if write == nil {
		t.Fatal("the Writer's Handlers have no handler for the new kind")
	}
	want := []T{
		{Kind: name, Start: t0, End: t0.Add(2 * time.Millisecond), LatencyMs: 2, Note: "first"},
		{Kind: name, Start: t0.Add(time.Second), End: t0.Add(time.Second + time.Millisecond), LatencyMs: 1, Note: "second"},
	}
	impossible := T{Kind: name, Start: t0, End: t0, LatencyMs: -1, Note: "negative"}
	for _, ev := range append(slices.Clone(want), impossible) {
		if err := write(&ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(&Meta{Start: t0, End: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	meta, err := ReadMeta(dir)
	if err != nil || !slices.Contains(meta.Files, file) {
		t.Fatalf("meta.json files %v (%v): want %s listed", meta.Files, err, file)
	}
	var got []T
	var read IOHandlers
	kind.On(&read, func(p *T) error { got = append(got, *p); return nil })
	tally := &Tally{}
	if err := (Reader{Window: meta.Window(), Tally: tally}).ReadIO(filepath.Join(dir, file), read); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %+v, want %+v", got, want)
	}
	if files := tally.Files(); len(files) != 1 || files[0].Implausible != 1 {
		t.Errorf("tally %+v: want the negative latency left out and counted", files)
	}
}

// TestHandleNewKind: Handlers.Handle passes an event of a new kind to
// the handler On set, and leaves it out without one.
func TestHandleNewKind(t *testing.T) {
	var h IOHandlers
	if err := h.Handle(&schedProbe{}); err != nil {
		t.Fatal(err)
	}
	var notes []string
	probeSched.On(&h, func(p *schedProbe) error { notes = append(notes, p.Note); return nil })
	for _, ev := range []any{&schedProbe{Note: "a"}, &event.Write{}, &schedProbe{Note: "b"}} {
		if err := h.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(notes, []string{"a", "b"}) {
		t.Errorf("handled %v", notes)
	}
	probeSched.On(&h, nil)
	if err := h.Handle(&schedProbe{Note: "c"}); err != nil || len(notes) != 2 {
		t.Errorf("after On(nil): %v, handled %v", err, notes)
	}
}
