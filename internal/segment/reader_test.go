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
	"time"

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

// scanAll reads every batch of path past any damage and returns the
// batches' positions, the damaged ranges and the error that ended the
// reading (nil at a clean end).
func scanAll(t *testing.T, path string) ([]int64, []Damage, *Reader, error) {
	t.Helper()
	r, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	var batches []int64
	var damage []Damage
	for {
		b, err := r.Next()
		if err == io.EOF {
			return batches, damage, r, nil
		}
		if d, ok := AsDamage(err); ok {
			var e *Error
			if !errors.As(err, &e) || e.Pos != d.Start || e.Path != path {
				t.Fatalf("damage %v is not an *Error at its start", err)
			}
			if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "position "+strconv.FormatInt(d.Start, 10)) {
				t.Fatalf("damage message %q: want one line naming the position", msg)
			}
			damage = append(damage, *d)
			continue
		}
		if err != nil {
			return batches, damage, r, err
		}
		if !b.CRCValid {
			t.Fatalf("batch at %d returned with a bad CRC", b.Position)
		}
		batches = append(batches, b.Position)
	}
}

func TestReaderDamage(t *testing.T) {
	good := readFile(t, filepath.Join(txnDir, seg0+".log"))
	// Batch boundaries of the real segment.
	all := []int64{0, 574, 652, 1196, 1274, 1817, 1895, 2439, 2517, 3086, 3164, 3735}
	size := int64(len(good))
	without := func(from, to int64) []int64 {
		var out []int64
		for _, p := range all {
			if p < from || p >= to {
				out = append(out, p)
			}
		}
		return out
	}
	edit := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	withLength := func(pos int, length uint32) []byte {
		return edit(func(b []byte) []byte { binary.BigEndian.PutUint32(b[pos+8:], length); return b })
	}
	type rng struct {
		start, end int64
		kind       DamageKind
	}
	tests := []struct {
		name     string
		data     []byte
		batches  []int64
		damage   []rng
		match    string // in the first damage's or the final error's message
		final    error  // the error that ends the reading, nil: io.EOF
		zeroTail int64
	}{
		{"whole", good, all, nil, "", nil, 0},
		{"empty", nil, nil, nil, "", nil, 0},
		// The defect of issue 33: one length covering the next ten
		// batches made them one batch with a bad CRC.
		{"length over the next ten batches", withLength(574, 3735-574-12), without(574, 652),
			[]rng{{574, 652, BadLength}}, "length 3149 runs over the valid batch at position 652 (the stored CRC matches", nil, 0},
		{"length one byte short", withLength(652, 544-12-1), without(652, 1196), []rng{{652, 1196, BadLength}}, "length 531 ends at position 1195, where no valid batch starts", nil, 0},
		{"payload byte", edit(func(b []byte) []byte { b[700] ^= 0x5a; return b }), without(652, 1196), []rng{{652, 1196, BadCRC}}, "CRC mismatch: stored", nil, 0},
		{"last batch's CRC", edit(func(b []byte) []byte { b[3800] ^= 1; return b }), without(3735, size), []rng{{3735, size, BadCRC}}, "CRC mismatch", nil, 0},
		{"cut inside the last batch", good[:size-10], all[:11], []rng{{3735, size - 10, Truncated}}, "truncated: length 66 exceeds remaining 56 bytes (the last batch is cut short", nil, 0},
		{"cut inside a batch's prefix", good[:652+5], all[:2], []rng{{652, 657, Truncated}}, "truncated", nil, 0},
		{"cut inside the first batch", good[:100], nil, []rng{{0, 100, Truncated}}, "truncated", nil, 0},
		{"2 GB length in the middle", withLength(652, 0x7fffffff), without(652, 1196), []rng{{652, 1196, BadLength}}, "exceeds the maximum batch size", nil, 0},
		{"negative length", withLength(574, 0x80000000), without(574, 652), []rng{{574, 652, BadLength}}, "below the minimum", nil, 0},
		{"length beyond the file", withLength(652, 60<<20), without(652, 1196), []rng{{652, 1196, BadLength}}, "runs past the end of the file, over the valid batch at position 1196", nil, 0},
		{"unknown magic", edit(func(b []byte) []byte { b[1196+16] = 7; return b }), without(1196, 1274), []rng{{1196, 1274, BadHeader}}, "unknown magic 7", nil, 0},
		{"zeroed bytes in the middle", edit(func(b []byte) []byte { clear(b[600:1300]); return b }), without(574, 1817), []rng{{574, 1817, BadLength}}, "", nil, 0},
		{"2 GB length first", withLength(0, 0x7fffffff), all[1:], []rng{{0, 574, BadLength}}, "exceeds the maximum batch size", nil, 0},
		// The last batch ends in 7 zero bytes: zeros after damage are
		// the file's zero tail, wherever the damaged batch ended.
		{"damage then zeros", append(withLength(3735, 0x7fffffff), make([]byte, 100)...), all[:11], []rng{{3735, size - 7, BadLength}}, "exceeds", nil, 107},
		{"text", []byte(strings.Repeat("this is not a segment\n", 50)), nil, nil, "position 0: not a Kafka log segment", ErrNotSegment, 0},
		{"zero padding", append(append([]byte(nil), good...), make([]byte, 5000)...), all, nil, "", nil, 5000},
		{"zeros only", make([]byte, 4096), nil, nil, "", nil, 4096},
		{"garbage after the batches", append(append([]byte(nil), good...), 1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), all,
			[]rng{{size, size + 3, BadLength}}, "length 0 is below the minimum", nil, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), seg0+".log"), tt.data)
			got, damage, r, err := scanAll(t, path)
			if !reflect.DeepEqual(got, tt.batches) {
				t.Errorf("batches at %v, want %v", got, tt.batches)
			}
			var ranges []rng
			var bytes int64
			for _, d := range damage {
				ranges = append(ranges, rng{d.Start, d.End, d.Kind})
				bytes += d.End - d.Start
			}
			if !reflect.DeepEqual(ranges, tt.damage) {
				t.Errorf("damage %v, want %v (%v)", ranges, tt.damage, damage)
			}
			if n, b := r.Damaged(); n != len(damage) || b != bytes {
				t.Errorf("counted %d ranges, %d bytes; reported %d, %d", n, b, len(damage), bytes)
			}
			if r.ZeroTail() != tt.zeroTail {
				t.Errorf("zero tail %d, want %d", r.ZeroTail(), tt.zeroTail)
			}
			if !errors.Is(err, tt.final) || (err == nil) != (tt.final == nil) {
				t.Fatalf("reading ended with %v, want %v", err, tt.final)
			}
			msg := ""
			if err != nil {
				msg = err.Error()
				if _, again := r.Next(); again != err {
					t.Errorf("second Next: %v", again)
				}
			} else if len(damage) > 0 {
				msg = damage[0].Error()
			}
			if !strings.Contains(msg, tt.match) {
				t.Errorf("message %q lacks %q", msg, tt.match)
			}
			for _, d := range damage {
				if d.Kind == Truncated && !errors.Is(&d, records.ErrTruncated) {
					t.Errorf("truncation %v does not wrap records.ErrTruncated", &d)
				}
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

// TestResyncBounded checks that a hostile file full of plausible batch
// headers with bad CRCs, each claiming a large length, costs a bounded
// search rather than its size times the claimed length.
func TestResyncBounded(t *testing.T) {
	const size = 8 << 20
	data := make([]byte, size)
	// Every 64 bytes a magic 2 header claiming 4 MiB: 131072 candidates,
	// 512 GiB of checksums without a bound.
	for pos := 0; pos+64 <= size; pos += 64 {
		h := data[pos:]
		binary.BigEndian.PutUint32(h[8:], 4<<20)
		h[16] = 2
		binary.BigEndian.PutUint32(h[23:], 0)  // last offset delta
		binary.BigEndian.PutUint32(h[57:], 0)  // record count
		binary.BigEndian.PutUint32(h[17:], 12) // a CRC that does not match
	}
	path := writeFile(t, filepath.Join(t.TempDir(), seg0+".log"), data)
	start := time.Now()
	batches, damage, _, err := scanAll(t, path)
	if elapsed := time.Since(start); elapsed > 20*time.Second {
		t.Fatalf("took %v", elapsed)
	}
	if err != nil || len(batches) != 0 || len(damage) == 0 || damage[len(damage)-1].End != size {
		t.Fatalf("%d batches, damage %v, %v", len(batches), damage, err)
	}
	if msg := damage[len(damage)-1].Error(); !strings.Contains(msg, "gave up") {
		t.Fatalf("last damage %q does not say the search gave up", msg)
	}
}
