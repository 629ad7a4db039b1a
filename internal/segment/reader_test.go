package segment

import (
	"encoding/binary"
	"errors"
	"io"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/records"
)

// scan reads every batch of path and returns their positions and the
// final error (nil at a clean end).
func scan(t *testing.T, path string) ([]records.Batch, *Reader, error) {
	t.Helper()
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var out []records.Batch
	for {
		b, err := r.Next()
		if err == io.EOF {
			return out, r, nil
		}
		if err != nil {
			return out, r, err
		}
		b.Data = nil
		out = append(out, b)
	}
}

func TestReaderAgreesWithDecoder(t *testing.T) {
	for _, dir := range []string{txnDir, idsDir} {
		path := filepath.Join(dir, seg0+".log")
		got, _, err := scan(t, path)
		if err != nil {
			t.Fatal(err)
		}
		var want []records.Batch
		var d records.Decoder
		for b, err := range d.Batches(readFile(t, path)) {
			if err != nil {
				t.Fatal(err)
			}
			b.Data = nil
			want = append(want, b)
		}
		if len(got) != len(want) || len(got) < 10 {
			t.Fatalf("%s: %d batches, decoder %d", path, len(got), len(want))
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Errorf("%s: batch %d: %+v, decoder %+v", path, i, got[i], want[i])
			}
			if !got[i].CRCValid {
				t.Errorf("%s: batch %d: CRC invalid", path, i)
			}
		}
	}
}

func TestReaderDamage(t *testing.T) {
	good := readFile(t, filepath.Join(txnDir, seg0+".log"))
	// Batch boundaries of the real segment: 0, 574, 652, 1196, ...
	const second, third = 574, 652
	withLength := func(pos int, length uint32) []byte {
		b := append([]byte(nil), good...)
		binary.BigEndian.PutUint32(b[pos+8:], length)
		return b
	}
	tests := []struct {
		name     string
		data     []byte
		batches  int
		errPos   int64 // -1: no error
		errIs    error
		errMatch string
		zeroTail int64
	}{
		{"whole", good, 12, -1, nil, "", 0},
		{"empty", nil, 0, -1, nil, "", 0},
		{"cut inside the last batch", good[:len(good)-10], 11, 3735, records.ErrTruncated, "truncated", 0},
		{"cut inside a batch's prefix", good[:third+5], 2, third, records.ErrTruncated, "truncated", 0},
		{"cut inside the first batch", good[:100], 0, 0, records.ErrTruncated, "truncated", 0},
		{"2 GB length in the middle", withLength(third, 0x7fffffff), 2, third, nil, "exceeds the maximum batch size", 0},
		{"negative length", withLength(second, 0x80000000), 1, second, nil, "below the minimum", 0},
		{"length beyond the file", withLength(third, 60<<20), 2, third, records.ErrTruncated, "truncated", 0},
		{"2 GB length first", withLength(0, 0x7fffffff), 0, 0, ErrNotSegment, "not a Kafka log segment", 0},
		{"text", []byte(strings.Repeat("this is not a segment\n", 50)), 0, 0, ErrNotSegment, "not a Kafka log segment", 0},
		{"zero padding", append(append([]byte(nil), good...), make([]byte, 5000)...), 12, -1, nil, "", 5000},
		{"zeros only", make([]byte, 4096), 0, -1, nil, "", 4096},
		{"garbage after the batches", append(append([]byte(nil), good...), 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), 12, int64(len(good)), nil, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), seg0+".log"), tt.data)
			got, r, err := scan(t, path)
			if len(got) != tt.batches {
				t.Errorf("%d batches, want %d", len(got), tt.batches)
			}
			if r.ZeroTail() != tt.zeroTail {
				t.Errorf("zero tail %d, want %d", r.ZeroTail(), tt.zeroTail)
			}
			if tt.errPos < 0 {
				if err != nil {
					t.Fatalf("error %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T), want *Error", err, err)
			}
			if e.Path != path || e.Pos != tt.errPos {
				t.Errorf("error at %s:%d, want %s:%d (%v)", e.Path, e.Pos, path, tt.errPos, err)
			}
			if tt.errIs != nil && !errors.Is(err, tt.errIs) {
				t.Errorf("error %v does not wrap %v", err, tt.errIs)
			}
			if tt.errIs == nil && (errors.Is(err, records.ErrTruncated) || errors.Is(err, ErrNotSegment)) {
				t.Errorf("error %v is not corruption", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.errMatch) || !strings.Contains(msg, path) ||
				!strings.Contains(msg, "position "+strconv.FormatInt(tt.errPos, 10)) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming the file, the position and %q", msg, tt.errMatch)
			}
			// The error sticks.
			if _, again := r.Next(); again != err {
				t.Errorf("second Next: %v", again)
			}
		})
	}
}

func TestOpenRefusesNonRegular(t *testing.T) {
	if _, err := Open(t.TempDir(), nil); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Open(dir) = %v", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.log"), nil); err == nil {
		t.Fatal("Open(missing) succeeded")
	}
}

// TestReaderAllocationBounded checks that a length claimed by the file is
// not what the reader allocates: a 60 MiB claim over 200 real bytes.
func TestReaderAllocationBounded(t *testing.T) {
	good := readFile(t, filepath.Join(txnDir, seg0+".log"))
	data := append([]byte(nil), good[:200]...)
	binary.BigEndian.PutUint32(data[8:], 60<<20)
	path := writeFile(t, filepath.Join(t.TempDir(), seg0+".log"), data)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := scan(t, path)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, records.ErrTruncated) {
		t.Fatalf("error %v, want truncation", err)
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 4<<20 {
		t.Fatalf("allocated %d bytes reading 200", n)
	}
}
