package jfr

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// collect reads data with read and returns the lock waits.
func collect(t testing.TB, data []byte) ([]event.LockWait, Stats, error) {
	t.Helper()
	var got []event.LockWait
	st, err := read(data, func(l *event.LockWait) error {
		got = append(got, *l)
		return nil
	})
	return got, st, err
}

func validSynth() *synth {
	return &synth{
		startNanos: uint64(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC).UnixNano()),
		startTicks: 5_000_000_000,
		tps:        3_000_000_000, // a 3 GHz TSC: 3 ticks a nanosecond
		threads: []synthThread{
			{ref: 1, tid: 4242, name: "data-plane-kafka-request-handler-0"},
			{ref: 2, tid: 4243, name: "data-plane-kafka-request-handler-1"},
		},
		classes: []synthClass{{ref: 7, sym: 70, name: "org/apache/kafka/storage/internals/log/UnifiedLog"}},
		events: []synthEvent{
			// 1 s after the chunk start, 30 ms, owner handler-1.
			{start: 5_000_000_000 + 3_000_000_000, dur: 90_000_000, thread: 1, class: 7, owner: 2},
			// Began 1 ms before the chunk did; no owner recorded.
			{start: 5_000_000_000 - 3_000_000, dur: 6_000_000, thread: 2, class: 7},
			// An unknown thread: skipped.
			{start: 5_000_000_000, dur: 3_000_000, thread: 99, class: 7},
			// An unknown class: skipped.
			{start: 5_000_000_000, dur: 3_000_000, thread: 1, class: 98},
		},
	}
}

func TestSynthetic(t *testing.T) {
	s := validSynth()
	one := s.bytes()
	s2 := validSynth()
	s2.startNanos += uint64(time.Minute)
	s2.tps = 1_000_000_000
	s2.events = s2.events[:1]
	data := append(slices.Clone(one), s2.bytes()...)

	got, st, err := collect(t, data)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	want := []event.LockWait{
		{Start: base.Add(time.Second), End: base.Add(time.Second + 30*time.Millisecond), LatencyMs: 30, TID: 4242,
			Thread: "data-plane-kafka-request-handler-0", Monitor: "org.apache.kafka.storage.internals.log.UnifiedLog",
			OwnerTID: 4243, Owner: "data-plane-kafka-request-handler-1"},
		{Start: base.Add(-time.Millisecond), End: base.Add(time.Millisecond), LatencyMs: 2, TID: 4243,
			Thread: "data-plane-kafka-request-handler-1", Monitor: "org.apache.kafka.storage.internals.log.UnifiedLog"},
		// Chunk 2: 1 GHz ticks, a minute later.
		{Start: base.Add(time.Minute + 3*time.Second), End: base.Add(time.Minute + 3*time.Second + 90*time.Millisecond), LatencyMs: 90, TID: 4242,
			Thread: "data-plane-kafka-request-handler-0", Monitor: "org.apache.kafka.storage.internals.log.UnifiedLog",
			OwnerTID: 4243, Owner: "data-plane-kafka-request-handler-1"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lock waits, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !sameLockWait(got[i], want[i]) {
			t.Errorf("lock wait %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	wantSt := Stats{Bytes: int64(len(data)), Chunks: 2, Events: 5, LockWaits: 3, SkippedEvents: 2}
	if st != wantSt {
		t.Errorf("stats %+v, want %+v", st, wantSt)
	}
	if got[0].Start.Location() != time.UTC {
		t.Errorf("start not in UTC: %v", got[0].Start)
	}

	// With a stack trace in the pool (the recordings Start takes have none).
	s = validSynth()
	s.frames = 1
	if got, _, err := collect(t, s.bytes()); err != nil || len(got) != 2 {
		t.Errorf("with a stack trace: %d lock waits, error %v", len(got), err)
	}
}

func sameLockWait(a, b event.LockWait) bool {
	return a.Start.Equal(b.Start) && a.End.Equal(b.End) && a.LatencyMs == b.LatencyMs &&
		a.TID == b.TID && a.Thread == b.Thread && a.Monitor == b.Monitor && a.OwnerTID == b.OwnerTID && a.Owner == b.Owner
}

func TestTicksToNanos(t *testing.T) {
	for _, c := range []struct {
		ticks, tps uint64
		want       int64
		ok         bool
	}{
		{0, 1e9, 0, true},
		{3e9, 3e9, 1e9, true},
		{1, 3e9, 0, true}, // rounded down
		{1<<63 - 1, 1e9, 1<<63 - 1, true},
		{1 << 63, 1e9, 0, false},
		{1<<64 - 1, 1, 0, false},
		{1<<64 - 1, 1 << 62, 4e9 - 1, true},
	} {
		got, ok := ticksToNanos(c.ticks, c.tps)
		if got != c.want || ok != c.ok {
			t.Errorf("ticksToNanos(%d, %d) = %d, %v; want %d, %v", c.ticks, c.tps, got, ok, c.want, c.ok)
		}
	}
}

// testdata reads testdata/contend.jfr.gz, a recording of Contend.java (see
// jvm_test.go) with the settings of Settings(time.Millisecond).
func testdata(t testing.TB) []byte {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "contend.jfr.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readWant reads a JSON Lines file of lock waits.
func readWant(t testing.TB, path string) []event.LockWait {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var want []event.LockWait
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l event.LockWait
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		want = append(want, l)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return want
}

func sortLockWaits(l []event.LockWait) {
	slices.SortFunc(l, func(a, b event.LockWait) int {
		if c := a.Start.Compare(b.Start); c != 0 {
			return c
		}
		return a.TID - b.TID
	})
}

// compareLockWaits checks got against want (from the JDK's own `jfr
// print`), in start order.
func compareLockWaits(t *testing.T, got, want []event.LockWait) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	sortLockWaits(got)
	sortLockWaits(want)
	if len(got) != len(want) {
		t.Fatalf("got %d lock waits, jfr print has %d", len(got), len(want))
	}
	for i := range want {
		if !sameLockWait(got[i], want[i]) {
			t.Errorf("lock wait %d:\n got %+v\nwant %+v (jfr print)", i, got[i], want[i])
		}
	}
}

// TestTestdata reads a real recording without Java and compares every
// lock wait with what the JDK's jfr tool printed for the same file
// (testdata/contend.want.jsonl, written with the file by
// go test -tags updatetestdata -run TestJVMTestdata ./internal/jfr).
func TestTestdata(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contend.jfr")
	if err := os.WriteFile(path, testdata(t), 0o644); err != nil {
		t.Fatal(err)
	}
	var got []event.LockWait
	st, err := ReadLockWaits(path, func(l *event.LockWait) error {
		got = append(got, *l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := readWant(t, filepath.Join("testdata", "contend.want.jsonl"))
	compareLockWaits(t, got, want)
	if st.Chunks != 1 || st.LockWaits != int64(len(want)) || st.SkippedEvents != 0 || st.Events != st.LockWaits {
		t.Errorf("stats %+v", st)
	}
	if len(got) < 5 {
		t.Errorf("only %d lock waits", len(got))
	}
	for _, l := range got {
		if l.Monitor != "Contend$Lock" || !strings.HasPrefix(l.Thread, "contender-") || !strings.HasPrefix(l.Owner, "contender-") ||
			l.TID == 0 || l.OwnerTID == 0 || l.TID == l.OwnerTID {
			t.Errorf("unexpected %+v", l)
		}
	}
}

func TestCallbackError(t *testing.T) {
	stop := errors.New("enough")
	n := 0
	st, err := read(validSynth().bytes(), func(*event.LockWait) error {
		n++
		return stop
	})
	if !errors.Is(err, stop) || n != 1 || st.LockWaits != 1 {
		t.Errorf("err %v, %d calls, stats %+v", err, n, st)
	}
	path := filepath.Join(t.TempDir(), "x.jfr")
	if err := os.WriteFile(path, validSynth().bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadLockWaits(path, func(*event.LockWait) error { return stop }); err != stop {
		t.Errorf("ReadLockWaits returned %v, want fn's error as it is", err)
	}
}

func TestFileErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	huge := filepath.Join(dir, "huge.jfr")
	if err := os.WriteFile(huge, []byte(chunkMagic), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, MaxFileSize+1); err != nil { // sparse
		t.Fatal(err)
	}
	valid := validSynth().bytes()
	for _, c := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.jfr"), "no such file"},
		{"directory", dir, "not a regular file"},
		{"empty", write("empty.jfr", nil), "empty file"},
		{"not jfr", write("pcap", []byte("\xd4\xc3\xb2\xa1 a pcap")), `not a JFR file (first bytes d4 c3 b2 a1)`},
		{"huge", huge, "limit"},
		{"short header", write("short.jfr", valid[:40]), "chunk 1 at offset 0: truncated: 40 bytes left"},
		{"truncated", write("trunc.jfr", valid[:len(valid)-1]), "chunk 1 at offset 0: truncated: chunk size"},
		{"second chunk truncated", write("trunc2.jfr", append(slices.Clone(valid), valid[:100]...)), "chunk 2 at offset"},
		{"garbage after a chunk", write("garbage.jfr", append(slices.Clone(valid), "garbage after the chunk"...)), "chunk 2 at offset " + strconv.Itoa(len(valid)) + ": truncated"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadLockWaits(c.path, func(*event.LockWait) error { return nil })
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "jfr: ") {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if !strings.Contains(err.Error(), c.path) {
				t.Errorf("error %q does not name the file", err)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error on more than one line: %q", err)
			}
		})
	}
	// The lock waits of the complete chunk come before the error.
	got, st, err := collect(t, append(slices.Clone(valid), valid[:100]...))
	if err == nil || len(got) != 2 || st.Chunks != 1 {
		t.Errorf("%d lock waits, stats %+v, error %v", len(got), st, err)
	}
}

// TestHostile builds chunks that jfr-parser v0.14.0 on its own would
// answer with a huge allocation (a fatal "out of memory" for the counts
// here), an endless loop, or a panic. Each must fail fast with an error.
func TestHostile(t *testing.T) {
	for _, c := range []struct {
		name   string
		damage func(*synth)
		want   string
	}{
		// make([]string, n): 64 GiB.
		{"metadata string count", func(s *synth) { s.stringCount = 1<<32 - 1 }, "string count 4294967295 is more than"},
		// make([]Thread, 0, n): 200 GiB.
		{"thread count", func(s *synth) { s.threadCount = 1<<32 - 1 }, "java.lang.Thread: constant count 4294967295"},
		// make([]rune, n): 16 GiB.
		{"string length", func(s *synth) { s.nameChars = 1<<32 - 1 }, "character count 4294967295"},
		// make([]StackFrame, 0, n): 160 GiB.
		{"frame count", func(s *synth) { s.frames = 1<<32 - 1 }, "jdk.types.StackTrace: array element count 4294967295"},
		// The parser reads the two pools again and again, growing its
		// constant lists until memory runs out.
		{"pool loop", func(s *synth) { s.loopPools = true }, "the pool chain loops"},
		// pos = start + int(size) < 0: index out of range.
		{"negative event size", func(s *synth) { s.eventSize = 1 << 63 }, "does not fit in the chunk"},
		{"event past the end", func(s *synth) { s.eventSize = 1 << 20 }, "does not fit in the chunk"},
		// A nil pointer: the parser keeps frames only of a field named frames.
		{"frames renamed", func(s *synth) { s.frames, s.framesName = 1, "frames2" }, `stack frames in field "frames2"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := validSynth()
			c.damage(s)
			begin := time.Now()
			_, _, err := collect(t, s.bytes())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if d := time.Since(begin); d > time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestDamaged truncates and corrupts real and synthetic recordings: the
// result is an error or fewer lock waits, never a panic.
func TestDamaged(t *testing.T) {
	inputs := []struct {
		name  string
		data  []byte
		flips int
	}{{"testdata", testdata(t), 600}, {"synthetic", validSynth().bytes(), 3000}}
	for _, in := range inputs {
		name, data := in.name, in.data
		full, _, err := collect(t, data)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(name+"/truncated", func(t *testing.T) {
			step := max(1, len(data)/500)
			for n := 0; n < len(data); n += step {
				got, _, err := collect(t, data[:n])
				if err == nil {
					t.Fatalf("cut at %d of %d: no error", n, len(data))
				}
				if strings.Contains(err.Error(), panicked) {
					t.Fatalf("cut at %d: %v", n, err)
				}
				if len(got) > 0 {
					t.Fatalf("cut at %d: %d lock waits from an incomplete chunk", n, len(got))
				}
			}
		})
		// The same, with the header's chunk size made to agree, so that
		// check and the parser meet the cut inside the chunk.
		t.Run(name+"/truncated consistently", func(t *testing.T) {
			step := max(1, len(data)/2000)
			for n := headerSize; n < len(data); n += step {
				d := slices.Clone(data[:n])
				binary.BigEndian.PutUint64(d[8:], uint64(n))
				got, _, err := collect(t, d)
				if err != nil && strings.Contains(err.Error(), panicked) {
					t.Fatalf("cut at %d: %v", n, err)
				}
				if err == nil && len(got) > len(full) {
					t.Fatalf("cut at %d: %d lock waits from %d", n, len(got), len(full))
				}
			}
		})
		t.Run(name+"/flipped", func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(len(data))))
			errs, more := 0, 0
			for i := 0; i < in.flips; i++ {
				d := slices.Clone(data)
				for range 1 + rng.IntN(4) {
					d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
				}
				got, _, err := collect(t, d)
				if err != nil {
					errs++
					if strings.Contains(err.Error(), panicked) {
						t.Fatalf("iteration %d: %v", i, err)
					}
				}
				more = max(more, len(got)-len(full))
			}
			t.Logf("%d of %d damaged copies gave an error; at most %d more lock waits than the %d intact", errs, in.flips, more, len(full))
		})
	}
}

// FuzzReadLockWaits feeds damaged recordings to read. A panic fails, and
// so does a panic inside jfr-parser that check should have prevented. The
// real recording is a large seed: give -fuzzminimizetime a few seconds,
// or the workers spend the default minute minimizing each new input.
//
//	go test -run '^$' -fuzz FuzzReadLockWaits -fuzztime 5m -fuzzminimizetime 3s ./internal/jfr
func FuzzReadLockWaits(f *testing.F) {
	f.Add(validSynth().bytes())
	withFrames := validSynth()
	withFrames.frames = 1
	f.Add(withFrames.bytes())
	f.Add(testdata(f))
	f.Fuzz(func(t *testing.T, data []byte) {
		// The fuzzer does not notice an input that never finishes; a panic
		// from another goroutine kills the worker, and the fuzzer keeps
		// the input as a failure.
		wd := time.AfterFunc(10*time.Second, func() {
			panic(fmt.Sprintf("read has not finished after 10s on a %d-byte input", len(data)))
		})
		defer wd.Stop()
		_, err := read(data, func(l *event.LockWait) error {
			if l.End.Before(l.Start) || l.LatencyMs < 0 {
				t.Fatalf("bad lock wait %+v", l)
			}
			return nil
		})
		if err != nil && strings.Contains(err.Error(), panicked) {
			t.Fatal(err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Fatalf("error on more than one line: %q", err)
		}
	})
}
