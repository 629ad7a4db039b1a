package agent

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
)

var t0 = time.Date(2026, 11, 22, 1, 0, 0, 0, time.UTC)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func req(client string, corr int32, api string, arrival, latency time.Duration) *event.Request {
	return &event.Request{Arrival: t0.Add(arrival), End: t0.Add(arrival + latency), LatencyMs: float64(latency) / 1e6,
		Client: client, Broker: "127.0.0.1:9092", API: api, CorrelationID: corr, Answered: true}
}

func write(start, latency time.Duration, file string) *event.Write {
	return &event.Write{Start: t0.Add(start), End: t0.Add(start + latency), LatencyMs: float64(latency) / 1e6, Op: "write",
		File: file, Topic: "t", Dev: "7:0"}
}

func newTestLog(t *testing.T, cfg SlowLogConfig) *slowLog {
	t.Helper()
	cfg.Dir = t.TempDir()
	s, err := newSlowLog(cfg, func() recording.Meta { return recording.Meta{Tool: "kscope agent"} })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// readSegment returns the correlation ids of the requests and the files
// of the writes of the one segment in dir.
func readSegment(t *testing.T, dir string) (meta *recording.Meta, corrs []int32, files []string) {
	t.Helper()
	segs, _ := filepath.Glob(filepath.Join(dir, SegmentPrefix+"*"))
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	meta, err := recording.ReadMeta(segs[0])
	if err != nil {
		t.Fatal(err)
	}
	err = recording.Lines(filepath.Join(segs[0], recording.RequestsFile), func(line []byte, _ int64) error {
		var r event.Request
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		corrs = append(corrs, r.CorrelationID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = recording.ReadIO(filepath.Join(segs[0], recording.WritesFile), recording.IOHandlers{Write: func(w *event.Write) error {
		files = append(files, w.File)
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	return meta, corrs, files
}

func TestSlowLogJoins(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(100)})
	// Connection a: 1 is fast and long done; 2 is fast but was in the
	// broker when 3 arrived; 3 is slow. Connection b: 4 is fast, 5 is a
	// slow Fetch (not a --slow-api by default).
	s.request(req("a:1", 1, "Produce", 0, ms(5)))
	s.request(req("a:1", 2, "Produce", ms(900), ms(60)))
	s.request(req("a:1", 3, "Produce", ms(950), ms(300)))
	s.request(req("b:1", 4, "Produce", ms(950), ms(3)))
	s.request(req("b:1", 5, "Fetch", ms(950), ms(500)))
	s.event(t0.Add(ms(10)), t0.Add(ms(11)), write(ms(10), ms(1), "before"))
	s.event(t0.Add(ms(1000)), t0.Add(ms(1200)), write(ms(1000), ms(200), "during"))
	s.event(t0.Add(ms(1240)), t0.Add(ms(1290)), write(ms(1240), ms(50), "at-the-end"))
	s.event(t0.Add(ms(1500)), t0.Add(ms(1501)), write(ms(1500), ms(1), "after"))

	s.flush(t0.Add(ms(1500))) // 3 ended 250 ms ago: not settled
	if st := s.stats(); st.Written != 0 {
		t.Fatalf("written %d before settling", st.Written)
	}
	s.flush(t0.Add(ms(2300)))
	if _, err := s.close(t0.Add(ms(2400))); err != nil {
		t.Fatal(err)
	}
	meta, corrs, files := readSegment(t, s.cfg.Dir)
	if want := []int32{2, 3}; !slices.Equal(corrs, want) {
		t.Errorf("requests %v, want %v (context 2, slow 3)", corrs, want)
	}
	if want := []string{"during", "at-the-end"}; !slices.Equal(files, want) {
		t.Errorf("writes %v, want %v", files, want)
	}
	if meta.SlowLog == nil || meta.SlowLog.ThresholdMs != 100 || meta.SlowLog.ContextRequests != 1 || meta.End.IsZero() {
		t.Errorf("meta %+v slow log %+v", meta, meta.SlowLog)
	}
	if meta.Version != recording.FormatVersion {
		t.Errorf("meta version %d", meta.Version)
	}
}

func TestSlowLogRateLimit(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(10), MaxPerSecond: 3})
	for i := range 10 {
		s.request(req("a:1", int32(i), "Produce", ms(10*i), ms(20)))
	}
	s.flush(t0.Add(5 * time.Second))
	st := s.stats()
	if st.Written != 3 || st.Dropped != 7 {
		t.Fatalf("written %d dropped %d, want 3 and 7", st.Written, st.Dropped)
	}
	if _, err := s.close(t0.Add(6 * time.Second)); err != nil {
		t.Fatal(err)
	}
	meta, _, _ := readSegment(t, s.cfg.Dir)
	if meta.SlowLog.Dropped != 7 {
		t.Errorf("meta dropped %d", meta.SlowLog.Dropped)
	}
}

func TestSlowLogRotates(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(10), Rotate: time.Minute, Keep: 2})
	for i := range 5 {
		at := time.Duration(i) * 61 * time.Second
		s.request(req("a:1", int32(i), "Produce", at, ms(20)))
		s.flush(t0.Add(at + 2*time.Second))
	}
	if _, err := s.close(t0.Add(10 * time.Minute)); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(s.cfg.Dir, SegmentPrefix+"*"))
	if len(segs) != 2 {
		t.Fatalf("segments %v, want the newest 2", segs)
	}
	for _, seg := range segs {
		m, err := recording.ReadMeta(seg)
		if err != nil || m.End.IsZero() {
			t.Errorf("%s: meta %v %v: want a closed segment", seg, m, err)
		}
	}
	if st := s.stats(); st.Written != 5 {
		t.Errorf("written %d", st.Written)
	}
}

func TestSlowLogBoundsEvents(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{MaxEvents: 100, Window: time.Second})
	for i := range 1000 {
		s.event(t0.Add(ms(i)), t0.Add(ms(i+1)), write(ms(i), ms(1), "x"))
	}
	if n := len(s.io) - s.ioHead; n != 100 {
		t.Fatalf("%d events kept, want 100", n)
	}
	if st := s.stats(); st.IOOverflow != 900 {
		t.Errorf("overflow %d", st.IOOverflow)
	}
	s.flush(t0.Add(10 * time.Second))
	if n := len(s.io) - s.ioHead; n != 0 {
		t.Fatalf("%d events kept after the window, want 0", n)
	}
	if _, err := os.Stat(s.cfg.Dir); err != nil {
		t.Fatal(err)
	}
}

// TestSlowLogJoinSkipsOld: events that ended long before a slow request
// are not read for it, and an event a little out of order still joins.
func TestSlowLogJoinSkipsOld(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(100), Window: time.Minute})
	for i := range 100 {
		s.event(t0.Add(ms(100*i)), t0.Add(ms(100*i+1)), write(ms(100*i), ms(1), "old"))
	}
	// Arrives after a later one, though it overlaps the slow request.
	s.event(t0.Add(ms(20000)), t0.Add(ms(20300)), write(ms(20000), ms(300), "late-arrival"))
	if i := s.firstEndingAfter(t0.Add(ms(20000))); i < 95 || i > 100 {
		t.Errorf("search starts at %d of %d", i, len(s.io))
	}
	s.request(req("a:1", 1, "Produce", ms(20000), ms(400)))
	s.flush(t0.Add(25 * time.Second))
	if _, err := s.close(t0.Add(26 * time.Second)); err != nil {
		t.Fatal(err)
	}
	_, _, files := readSegment(t, s.cfg.Dir)
	if !slices.Equal(files, []string{"late-arrival"}) {
		t.Errorf("writes %v, want the overlapping one only", files)
	}
}

// The scheduling evidence joins like the I/O: run delays and wake-ups
// around a slow request, and its connection's thread (reported once, when
// the connection began) once per segment.
func TestSlowLogSched(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(100)})
	s.connThread(&event.ConnThread{Kind: event.KindConnThread, Time: t0, TID: 21, Thread: "data-plane-kafk", Client: "a:1", Broker: "127.0.0.1:9092"})
	s.connThread(&event.ConnThread{Kind: event.KindConnThread, Time: t0, TID: 22, Thread: "data-plane-kafk", Client: "b:1", Broker: "127.0.0.1:9092"})
	s.request(req("a:1", 1, "Produce", ms(1000), ms(300)))
	s.request(req("a:1", 2, "Produce", ms(1400), ms(300)))
	s.event(t0.Add(ms(1010)), t0.Add(ms(1200)), &event.RunDelay{Kind: event.KindRunDelay, Start: t0.Add(ms(1010)), End: t0.Add(ms(1200)), TID: 11})
	s.event(t0.Add(ms(1050)), t0.Add(ms(1250)), &event.Wakeup{Kind: event.KindWakeup, Start: t0.Add(ms(1050)), End: t0.Add(ms(1250)), TID: 12, WakerTID: 31})
	s.event(t0.Add(ms(5000)), t0.Add(ms(5100)), &event.RunDelay{Kind: event.KindRunDelay, Start: t0.Add(ms(5000)), End: t0.Add(ms(5100)), TID: 11})
	s.flush(t0.Add(ms(3000)))
	if _, err := s.close(t0.Add(ms(3100))); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(s.cfg.Dir, SegmentPrefix+"*"))
	if len(segs) != 1 {
		t.Fatalf("segments %v", segs)
	}
	var kinds []string
	err := recording.Lines(filepath.Join(segs[0], recording.SchedFile), func(line []byte, _ int64) error {
		var k struct{ Kind, Client string }
		if err := json.Unmarshal(line, &k); err != nil {
			return err
		}
		kinds = append(kinds, k.Kind+" "+k.Client)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(kinds)
	want := []string{event.KindConnThread + " a:1", event.KindRunDelay + " ", event.KindWakeup + " "}
	if !slices.Equal(kinds, want) {
		t.Errorf("sched.jsonl %q, want %q (b:1 had no slow request; the late delay is outside)", kinds, want)
	}
}

// TestSlowLogJobs: with explaining on, each slow request written comes
// back from flush with the requests ahead of it on its connection and
// every event around it, also those already written for another slow
// request.
func TestSlowLogJobs(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(100)})
	s.explaining = true
	s.request(req("a:1", 0, "Produce", 0, ms(5))) // long done: not context
	s.request(req("a:1", 1, "Produce", ms(850), ms(60)))
	s.request(req("a:1", 2, "Produce", ms(900), ms(300)))
	s.request(req("b:1", 3, "Produce", ms(950), ms(300)))
	// Follower 2's fetches: one long before (not kept with them), one
	// in time.
	for i, at := range []time.Duration{-5 * time.Second, ms(1100)} {
		f := req("f:1", int32(10+i), "Fetch", at, ms(5))
		f.ReplicaID = new(int32(2))
		s.request(f)
	}
	s.event(t0.Add(ms(1000)), t0.Add(ms(1200)), write(ms(1000), ms(200), "during"))
	s.event(t0.Add(ms(5000)), t0.Add(ms(5001)), write(ms(5000), ms(1), "later"))
	jobs := s.flush(t0.Add(ms(3000)))
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
	for _, j := range jobs {
		var files []string
		for _, ev := range j.events {
			if w, ok := ev.(*event.Write); ok {
				files = append(files, w.File)
			}
		}
		if !slices.Equal(files, []string{"during"}) {
			t.Errorf("request %d: events %v, want [during]", j.r.CorrelationID, files)
		}
	}
	if b := jobs[0].before; len(b) != 1 || b[0].CorrelationID != 1 {
		t.Errorf("request 2: context %v, want request 1", b)
	}
	if len(jobs[1].before) != 0 {
		t.Errorf("request 3: context %v, want none", jobs[1].before)
	}
	for _, j := range jobs {
		if len(j.fetches) != 1 || j.fetches[0].CorrelationID != 11 {
			t.Errorf("request %d: fetches %v, want the follower's fetch 11", j.r.CorrelationID, j.fetches)
		}
	}
	if again := s.flush(t0.Add(ms(4000))); len(again) != 0 {
		t.Errorf("%d jobs again", len(again))
	}
	if _, err := s.close(t0.Add(ms(5000))); err != nil {
		t.Fatal(err)
	}
	// The follower's fetch goes into the segment once, with the slow
	// requests and their context: explain measures replication by it.
	if _, corrs, _ := readSegment(t, s.cfg.Dir); !slices.Equal(corrs, []int32{1, 2, 11, 3}) {
		t.Errorf("segment requests %v, want [1 2 11 3]", corrs)
	}
}

// TestSlowLogContextOnBusyConnection: the request a slow one queued
// behind is kept with it even when more requests than the connection's
// history holds complete before the slow one is written (Settle later).
func TestSlowLogContextOnBusyConnection(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(100)})
	s.request(req("a:1", 1, "Produce", 0, ms(90)))       // ahead, not slow
	s.request(req("a:1", 2, "Produce", ms(10), ms(150))) // slow, queued behind 1
	for i := range int32(3 * connHistory) {
		s.request(req("a:1", 3+i, "Produce", ms(200+10*int(i)), ms(5)))
	}
	s.flush(t0.Add(ms(3000)))
	if _, err := s.close(t0.Add(ms(3100))); err != nil {
		t.Fatal(err)
	}
	if _, corrs, _ := readSegment(t, s.cfg.Dir); !slices.Equal(corrs, []int32{1, 2}) {
		t.Errorf("segment requests %v, want [1 2] (the request ahead, the slow one)", corrs)
	}
}

// TestSlowLogKeepsACopy: the decoder lends its events (wire.Config.Recycle)
// and reuses one for the next request once onRequest returns; the slow
// log still writes the requests it was given, partitions included.
func TestSlowLogKeepsACopy(t *testing.T) {
	s := newTestLog(t, SlowLogConfig{Threshold: ms(100)})
	lent := &event.Request{Partitions: make([]event.Partition, 0, 4)}
	reuse := func(from *event.Request, topic string) {
		parts := append(lent.Partitions[:0], event.Partition{Topic: topic, Partition: 1})
		*lent = *from
		lent.Partitions = parts
		s.request(lent)
	}
	reuse(req("a:1", 2, "Produce", ms(900), ms(60)), "context")
	reuse(req("a:1", 3, "Produce", ms(950), ms(300)), "slow")
	reuse(req("a:1", 4, "Produce", ms(2000), ms(1)), "later")
	s.flush(t0.Add(ms(2300)))
	if _, err := s.close(t0.Add(ms(2400))); err != nil {
		t.Fatal(err)
	}
	segs, _ := filepath.Glob(filepath.Join(s.cfg.Dir, SegmentPrefix+"*"))
	if len(segs) != 1 {
		t.Fatalf("segments %v, want one", segs)
	}
	var got []string
	err := recording.Lines(filepath.Join(segs[0], recording.RequestsFile), func(line []byte, _ int64) error {
		var r event.Request
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		for _, p := range r.Partitions {
			got = append(got, fmt.Sprintf("%d:%s", r.CorrelationID, p.Topic))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"2:context", "3:slow"}; !slices.Equal(got, want) {
		t.Errorf("written %v, want %v", got, want)
	}
}
