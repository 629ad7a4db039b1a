package segment

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/records"
)

// FuzzSegment writes arbitrary bytes as a segment and reads them with the
// Reader, Lookup and Identify. The reader, resynchronising past
// damage, must account for every byte exactly once (valid batches,
// damaged ranges, a zero tail), return only batches whose CRC matches and
// that records.Decoder reads the same way, and nothing may panic. Seeds
// are real segments written by Kafka, whole, cut and damaged.
func FuzzSegment(f *testing.F) {
	for _, dir := range []string{txnDir, idsDir} {
		data, err := os.ReadFile(filepath.Join(dir, seg0+".log"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(append(append([]byte(nil), data[:700]...), make([]byte, 40)...))
		merged := append([]byte(nil), data...)
		be.PutUint32(merged[382+8:], 2000) // a length over several batches
		f.Add(merged)
		flipped := append([]byte(nil), data...)
		flipped[1000] ^= 0x10
		f.Add(flipped)
	}
	f.Add([]byte("not a segment at all, but text"))

	// One directory for all the inputs a worker runs, one at a time:
	// a new one per input costs more than reading it.
	dir := filepath.Join(f.TempDir(), "topic-0")
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		logPath := filepath.Join(dir, seg0+".log")
		if err := os.WriteFile(logPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// A small batch limit keeps huge claimed lengths cheap.
		d := &records.Decoder{MaxBatchSize: 1 << 20, MaxDecompressedSize: 1 << 20}
		got := checkTiling(t, logPath, data, d)

		// Lookup of each batch's range finds it (a few, to stay fast).
		for i, b := range got {
			if i == 2 {
				break
			}
			res, err := Lookup(logPath, b.Position, int64(b.Size), records.DefaultIDHeader, d)
			if len(res.Matches) == 0 || res.Matches[0].Batch.Position != b.Position {
				if err == nil {
					t.Fatalf("lookup of batch at %d: %+v", b.Position, res.Matches)
				}
			}
		}
		if _, err := Identify(logPath); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzVerify writes arbitrary bytes as every file of a partition and
// verifies it: no panic, no error but for unreadable paths, and a bounded
// number of problems kept. Seeds are real segments written by Kafka.
func FuzzVerify(f *testing.F) {
	for _, dir := range []string{txnDir, idsDir} {
		data, err := os.ReadFile(filepath.Join(dir, seg0+".log"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/3])
	}
	dir := filepath.Join(f.TempDir(), "topic-0")
	if err := os.Mkdir(dir, 0o755); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{seg0 + ".log", seg0 + ".index", seg0 + ".timeindex", LeaderEpochFile, "partition.metadata"} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := Verify(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(rep.Problems) > 6*maxProblemsPerFile {
			t.Fatalf("%d problems kept", len(rep.Problems))
		}
	})
}

// checkTiling reads path to its end and checks that its valid batches,
// damaged ranges and zero tail cover data exactly, in order, and returns
// the batches.
func checkTiling(t *testing.T, path string, data []byte, d *records.Decoder) []records.Batch {
	r, err := Open(path, d)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []records.Batch
	var end, damaged int64
	ranges := 0
	var final error
	for {
		b, err := r.Next()
		if dm, ok := AsDamage(err); ok {
			var e *Error
			if !errors.As(err, &e) || e.Pos != end || dm.Start != end || dm.End <= dm.Start || dm.End > int64(len(data)) || dm.Kind < BadLength || dm.Kind > Truncated {
				t.Fatalf("damage %v after %d bytes", err, end)
			}
			end, damaged, ranges = dm.End, damaged+dm.End-dm.Start, ranges+1
			continue
		}
		if err != nil {
			final = err
			break
		}
		if b.Position != end || b.Size <= 0 || len(b.Data) != b.Size || !b.CRCValid {
			t.Fatalf("batch at %d of %d bytes (CRC valid %v) after %d bytes", b.Position, b.Size, b.CRCValid, end)
		}
		agreeWithDecoder(t, data, b)
		end += int64(b.Size)
		b.Data = nil
		got = append(got, b)
	}
	if n, bytes := r.Damaged(); n != ranges || bytes != damaged {
		t.Fatalf("counted %d ranges of %d bytes, returned %d of %d", n, bytes, ranges, damaged)
	}
	switch {
	case final == io.EOF && end+r.ZeroTail() != int64(len(data)):
		t.Fatalf("clean end after %d bytes and %d zeros of %d", end, r.ZeroTail(), len(data))
	case final != io.EOF && (!errors.Is(final, ErrNotSegment) || end != 0 || len(got) != 0):
		t.Fatalf("reading ended with %v after %d bytes", final, end)
	}
	return got
}

// agreeWithDecoder checks that records.Decoder reads b's bytes as the
// same batch.
func agreeWithDecoder(t *testing.T, data []byte, b records.Batch) {
	d := &records.Decoder{MaxBatchSize: 1 << 20}
	for want, err := range d.Batches(data[b.Position : b.Position+int64(b.Size)]) {
		if err != nil {
			t.Fatalf("decoder fails on the batch at %d: %v", b.Position, err)
		}
		want.Position, want.Data = b.Position, nil
		b.Data = nil
		if !reflect.DeepEqual(b, want) {
			t.Fatalf("reader %+v, decoder %+v", b, want)
		}
		return
	}
}

// FuzzIndex reads arbitrary bytes as offset and time indexes, by name and
// by kind, identifies them, and binary-searches them as Lookup does:
// every byte is an entry in use, an unused entry or a partial entry, and
// nothing panics. Seeds are real indexes written by Kafka.
func FuzzIndex(f *testing.F) {
	for _, p := range []string{
		filepath.Join(idsDir, seg0+".index"),
		filepath.Join(txnDir, seg0+".timeindex"),
		filepath.Join(idsDir, seg0+".timeindex"),
	} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(append(append([]byte(nil), data...), make([]byte, 48)...)) // preallocated
		f.Add(append(append([]byte(nil), data...), 1, 2, 3))             // a partial entry
	}
	f.Add([]byte{})

	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, tt := range []struct {
			name string
			kind logdir.Kind
			size int64
		}{
			{seg0 + ".index", logdir.KindIndex, OffsetEntrySize},
			{seg0 + ".timeindex", logdir.KindTimeIndex, TimeEntrySize},
		} {
			p := filepath.Join(dir, tt.name)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			n := 0
			info, err := ReadIndex(p, func(IndexEntry) error { n++; return nil })
			if err != nil {
				t.Fatal(err)
			}
			if n != info.Entries || int64(info.Entries+info.Unused)*tt.size+int64(info.TrailingBytes) != int64(len(data)) {
				t.Fatalf("%s: %d entries, info %+v, %d bytes", tt.name, n, info, len(data))
			}
			bare := filepath.Join(dir, "bare")
			if err := os.WriteFile(bare, data, 0o644); err != nil {
				t.Fatal(err)
			}
			again, err := ReadIndexAs(bare, tt.kind, func(IndexEntry) error { return nil })
			again.BaseKnown = true
			if err != nil || again != info {
				t.Fatalf("by kind %+v, %v; by name %+v", again, err, info)
			}
			if id, err := Identify(p); err != nil || id.Mismatch() && id.ByContent <= Blank {
				t.Fatalf("identify: %+v, %v", id, err)
			}
		}
		if h, err := indexHint(filepath.Join(dir, seg0+".index"), int64(len(data))*7); err != nil || h < 0 {
			t.Fatalf("index hint %d, %v", h, err)
		}
	})
}
