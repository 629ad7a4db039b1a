package segment

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/kscope-dev/kscope/internal/records"
)

// FuzzSegment writes arbitrary bytes as a partition's segment, index and
// time index, and reads them every way the package offers: the reader
// must agree with records.Decoder on the same bytes, account for every
// byte, and nothing may panic. Seeds are real segments written by Kafka.
func FuzzSegment(f *testing.F) {
	for _, dir := range []string{txnDir, idsDir} {
		data, err := os.ReadFile(filepath.Join(dir, seg0+".log"))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		f.Add(data[:len(data)/2])
		f.Add(append(append([]byte(nil), data[:700]...), make([]byte, 40)...))
	}
	f.Add([]byte("not a segment at all, but text"))

	f.Fuzz(func(t *testing.T, data []byte) {
		dir := filepath.Join(t.TempDir(), "topic-0")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		logPath := filepath.Join(dir, seg0+".log")
		if err := os.WriteFile(logPath, data, 0o644); err != nil {
			t.Fatal(err)
		}
		// A small batch limit keeps huge claimed lengths cheap.
		d := &records.Decoder{MaxBatchSize: 1 << 20, MaxDecompressedSize: 1 << 20}
		r, err := Open(logPath, d)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []records.Batch
		var end int64
		var rerr error
		for {
			b, err := r.Next()
			if err != nil {
				if err != io.EOF {
					rerr = err
				}
				break
			}
			if b.Position != end || b.Size <= 0 || len(b.Data) != b.Size {
				t.Fatalf("batch at %d of %d bytes after %d bytes", b.Position, b.Size, end)
			}
			end += int64(b.Size)
			b.Data = nil
			got = append(got, b)
		}
		var e *Error
		switch {
		case rerr == nil && end+r.ZeroTail() != int64(len(data)):
			t.Fatalf("clean end after %d bytes and %d zeros of %d", end, r.ZeroTail(), len(data))
		case rerr != nil && (!errors.As(rerr, &e) || e.Pos != end || e.Path != logPath):
			t.Fatalf("error %v not at the end of the last batch %d", rerr, end)
		}

		// The decoder on the bytes in memory finds the same batches.
		var want []records.Batch
		d2 := &records.Decoder{MaxBatchSize: 1 << 20}
		for b, err := range d2.Batches(data[:end]) {
			if err != nil {
				t.Fatalf("decoder fails where the reader did not: %v", err)
			}
			b.Data = nil
			want = append(want, b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("reader %+v, decoder %+v", got, want)
		}

		// Lookup of each batch's range finds it (a few, to stay fast).
		for i, b := range got {
			if i == 4 {
				break
			}
			res, err := Lookup(logPath, b.Position, int64(b.Size), records.DefaultIDHeader, d)
			if len(res.Matches) == 0 || res.Matches[0].Batch.Position != b.Position {
				if err == nil {
					t.Fatalf("lookup of batch at %d: %+v", b.Position, res.Matches)
				}
			}
		}

		// The same bytes as indexes, and the directory verified.
		for _, ext := range []string{".index", ".timeindex"} {
			p := filepath.Join(dir, seg0+ext)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			n := 0
			info, err := ReadIndex(p, func(IndexEntry) error { n++; return nil })
			if err != nil {
				t.Fatal(err)
			}
			size := int64(OffsetEntrySize)
			if ext == ".timeindex" {
				size = TimeEntrySize
			}
			if n != info.Entries || int64(info.Entries+info.Unused)*size+int64(info.TrailingBytes) != int64(len(data)) {
				t.Fatalf("%s: %d entries, info %+v, %d bytes", ext, n, info, len(data))
			}
		}
		for _, name := range []string{LeaderEpochFile, "partition.metadata"} {
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
