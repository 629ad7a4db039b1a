package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// withCRC recomputes a magic 2 batch's CRC after a test edited it, so that
// the decoder's structural checks are what the test exercises.
func withCRC(b []byte) []byte {
	binary.BigEndian.PutUint32(b[17:], crc32.Checksum(b[21:], crc32.MakeTable(crc32.Castagnoli)))
	return b
}

// edit returns a copy of b changed by fn.
func edit(b []byte, fn func([]byte) []byte) []byte { return fn(slices.Clone(b)) }

// setLength sets the batch length field to n.
func setLength(b []byte, n uint32) []byte {
	binary.BigEndian.PutUint32(b[8:], n)
	return b
}

// rawV2 builds an uncompressed magic 2 batch around hand-made record bytes.
func rawV2(count int32, records []byte) []byte {
	b := kmsg.RecordBatch{Magic: 2, NumRecords: count, Records: records, ProducerID: -1}
	out := b.AppendTo(nil)
	return withCRC(setLength(out, uint32(len(out)-12)))
}

// compressedV2 builds a magic 2 batch with the given codec bits and
// payload, whatever the payload holds.
func compressedV2(codec Codec, count int32, payload []byte) []byte {
	b := kmsg.RecordBatch{Magic: 2, Attributes: int16(codec), NumRecords: count, Records: payload}
	out := b.AppendTo(nil)
	return withCRC(setLength(out, uint32(len(out)-12)))
}

func TestHugeLengthClaim(t *testing.T) {
	data := make([]byte, 212)
	binary.BigEndian.PutUint32(data[8:], math.MaxInt32)
	data[16] = 2

	var d Decoder
	_, _, err := collect(t, &d, data)
	if err == nil || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "length 2147483647") {
		t.Fatalf("error %v, want a corruption error naming the length", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Pos != 0 {
		t.Fatalf("error %v is not an *Error at position 0", err)
	}
	if _, _, err := d.MessageIDs(data, DefaultIDHeader); err == nil || errors.Is(err, ErrTruncated) {
		t.Fatalf("MessageIDs error %v", err)
	}

	// With the limit raised, the same claim is indistinguishable from a
	// truncated batch; the reader must still not allocate for it.
	big := Decoder{MaxBatchSize: math.MaxInt32}
	_, _, err = collect(t, &big, data)
	if !errors.Is(err, ErrTruncated) || err.Error() != "records: batch at position 0: truncated batch: length 2147483647 exceeds remaining 200 bytes" {
		t.Fatalf("error %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = big.NewReader(bytes.NewReader(data), 0).Next()
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("reader error %v", err)
	}
	// The reader's window is a fixed readChunk; the 2 GB claim must
	// add nothing to it.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > readChunk+64<<10 {
		t.Fatalf("reader allocated %d bytes for a %d-byte input", alloc, len(data))
	}
}

func TestCRCCorruption(t *testing.T) {
	v2 := buildV2(t, v2Spec{codec: kgo.Lz4Compression(), records: testRecords("a", 3)})
	v1 := legacyMsg(1, 0, 0, 1, []byte("k"), []byte("value"))
	tests := []struct {
		name string
		data []byte
	}{
		{"v2 stored crc", edit(v2, func(b []byte) []byte { b[17] ^= 1; return b })},
		{"v2 attributes", edit(v2, func(b []byte) []byte { b[22] ^= attrTransactional; return b })},
		{"v2 payload", edit(v2, func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b })},
		{"v1 stored crc", edit(v1, func(b []byte) []byte { b[12] ^= 1; return b })},
		{"v1 value", edit(v1, func(b []byte) []byte { b[len(b)-1] ^= 1; return b })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			var n int
			for b, err := range d.Batches(tt.data) {
				// A bad CRC is reported on the batch, not as an
				// error: the rest of the batch may still be readable.
				if err != nil {
					t.Fatal(err)
				}
				if b.CRCValid {
					t.Error("CRCValid on a corrupted batch")
				}
				n++
			}
			if n != 1 {
				t.Errorf("%d batches", n)
			}
		})
	}
}

// TestMalformed feeds structurally broken batches: each must fail with an
// error (never a panic), and never be mistaken for truncation.
func TestMalformed(t *testing.T) {
	good := buildV2(t, v2Spec{records: testRecords("a", 2)})
	rec := func(fields ...[]byte) []byte { return bytes.Join(fields, nil) }
	vi := func(v int64) []byte { return binary.AppendVarint(nil, v) }
	tests := []struct {
		name    string
		data    []byte
		records bool   // the error shows only when records are decoded
		want    string // in the error
	}{
		{"negative length", edit(good, func(b []byte) []byte { return setLength(b, 0xfffffff0) }), false, "length -16 is below"},
		{"length below minimum", edit(good, func(b []byte) []byte { return setLength(b, 13) }), false, "below the minimum 14"},
		{"v2 length below v2 minimum", edit(good, func(b []byte) []byte { return setLength(b[:60], 48) }), false, "for magic 2"},
		{"unknown magic", edit(good, func(b []byte) []byte { b[16] = 3; return b }), false, "unknown magic 3"},
		{"negative record count", edit(good, func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 0xffffffff); return b }), false, "negative record count"},
		{"record count beyond bytes", edit(good, func(b []byte) []byte { binary.BigEndian.PutUint32(b[57:], 1000); return b }), false, "exceeds what"},
		{"fewer records than counted", rawV2(3, good[61:]), true, "record 2 of 3"},
		{"bytes after records", rawV2(1, good[61:]), true, "bytes follow"},
		{"record length beyond batch", rawV2(1, rec(vi(100), make([]byte, 10))), true, "record length 100 exceeds"},
		{"record length too small", rawV2(1, rec(vi(2), make([]byte, 10))), true, "below the minimum 6"},
		{"varint overflow", rawV2(1, rec(vi(13), []byte{0}, bytes.Repeat([]byte{0xff}, 12))), true, "overflows"},
		{"key beyond record", rawV2(1, rec(vi(6), []byte{0, 0, 0}, vi(50), vi(0), vi(0))), true, "key: length 50 exceeds"},
		{"key length invalid", rawV2(1, rec(vi(6), []byte{0, 0, 0}, vi(-2), vi(0), vi(0))), true, "key: invalid length -2"},
		{"huge header count", rawV2(1, rec(vi(7), []byte{0, 0, 0}, vi(-1), vi(-1), vi(1<<30))), true, "header count"},
		{"null header key", rawV2(1, rec(vi(8), []byte{0, 0, 0}, vi(-1), vi(-1), vi(1), vi(-1), vi(-1))), true, "header key length -1"},
		{"record with trailing bytes", rawV2(1, rec(vi(8), []byte{0, 0, 0}, vi(-1), vi(-1), vi(0), []byte{9, 9})), true, "beyond its headers"},
		{"garbage gzip", compressedV2(CodecGzip, 1, []byte("not gzip at all")), true, "decompressing gzip"},
		{"garbage lz4", compressedV2(CodecLZ4, 1, []byte("not lz4 at all")), true, "decompressing lz4"},
		{"garbage zstd", compressedV2(CodecZstd, 1, []byte("not zstd at all")), true, "decompressing zstd"},
		{"unknown codec", compressedV2(5, 1, []byte("x")), true, "unknown compression codec"},
		{"legacy null wrapper value", legacyMsg(1, 0, int8(CodecGzip), 0, nil, nil), true, "null value"},
		{"legacy value beyond message", edit(legacyMsg(0, 0, 0, 0, nil, []byte("abc")), func(b []byte) []byte {
			binary.BigEndian.PutUint32(b[len(b)-7:], 4)
			return b
		}), true, "value: length 4 exceeds"},
		{"legacy nested compression", legacyWrapper(t, 1, 0, 0, 0, kgo.GzipCompression(),
			legacyWrapper(t, 1, 0, 0, 0, kgo.GzipCompression(), legacyMsg(1, 0, 0, 0, nil, []byte("x")))), true, "nested compression"},
		{"legacy magic mismatch", legacyWrapper(t, 1, 0, 0, 0, kgo.GzipCompression(), legacyMsg(0, 0, 0, 0, nil, []byte("x"))), true, "magic 0 inside a magic 1 wrapper"},
		{"legacy empty wrapper", legacyWrapper(t, 1, 0, 0, 0, kgo.GzipCompression()), true, "holds no messages"},
		{"legacy truncated inner", legacyWrapper(t, 0, 0, 0, 0, kgo.GzipCompression(), legacyMsg(0, 0, 0, 0, nil, []byte("x"))[:20]), true, "inner message 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			batches, _, err := collect(t, &d, tt.data)
			if err == nil || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "records: batch at position 0: ") {
				t.Errorf("error %q does not give the position", err)
			}
			if tt.records != (len(batches) == 1) {
				t.Errorf("%d batches decoded before the error", len(batches))
			}
			if _, _, err := d.MessageIDs(tt.data, DefaultIDHeader); tt.data[16] == 2 && err == nil {
				t.Error("MessageIDs found no error")
			}
		})
	}
}

func TestDecompressedLimit(t *testing.T) {
	// 20 records of about 60 bytes: 1.2 KB decompressed.
	tests := []struct {
		name string
		data []byte
	}{
		{"gzip", buildV2(t, v2Spec{codec: kgo.GzipCompression(), records: testRecords("a", 20)})},
		{"lz4", buildV2(t, v2Spec{codec: kgo.Lz4Compression(), records: testRecords("a", 20)})},
		{"snappy", buildV2(t, v2Spec{codec: kgo.SnappyCompression(), records: testRecords("a", 20)})},
		{"snappy-xerial", buildV2(t, v2Spec{codec: kgo.SnappyCompression(), xerial: true, records: testRecords("a", 20)})},
		{"zstd", buildV2(t, v2Spec{codec: kgo.ZstdCompression(), records: testRecords("a", 20)})},
		{"legacy gzip", legacyWrapper(t, 1, 0, 0, 0, kgo.GzipCompression(), legacyMsg(1, 0, 0, 0, nil, make([]byte, 2000)))},
		// Headers claiming 2 GiB, which the decoders would allocate
		// up front: rejected before decompressing.
		{"snappy claim", compressedV2(CodecSnappy, 1, binary.AppendUvarint(nil, math.MaxInt32))},
		{"xerial claim", compressedV2(CodecSnappy, 1, slices.Concat(xerialMagic, []byte{0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5}, binary.AppendUvarint(nil, math.MaxInt32)))},
		{"zstd claim", compressedV2(CodecZstd, 1, []byte{0x28, 0xb5, 0x2f, 0xfd, 0x80, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decoder{MaxDecompressedSize: 1000}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, _, err := collect(t, &d, tt.data)
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error %v, want ErrTooLarge", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
				t.Errorf("allocated %d bytes", alloc)
			}
			// The default limit lets the real batches through.
			if !strings.Contains(tt.name, "claim") {
				var d Decoder
				if _, _, err := collect(t, &d, tt.data); err != nil {
					t.Errorf("default limit: %v", err)
				}
			}
		})
	}
}

// TestMessageIDsNoDecompress shows that counting records with no header
// name reads only batch headers: a batch whose compressed payload is
// garbage still counts.
func TestMessageIDsNoDecompress(t *testing.T) {
	data := append(buildV2(t, v2Spec{records: testRecords("a", 2)}), compressedV2(CodecZstd, 1000, []byte("garbage"))...)
	var d Decoder
	if n, ids, err := d.MessageIDs(data, ""); n != 1002 || ids != nil || err != nil {
		t.Errorf("MessageIDs(\"\") = %d, %q, %v", n, ids, err)
	}
	// Asked for ids, it must decompress, and reports the ids of the
	// batches before the failing one.
	n, ids, err := d.MessageIDs(data, DefaultIDHeader)
	if err == nil || n != 2 || len(ids) != 2 {
		t.Errorf("MessageIDs = %d, %q, %v", n, ids, err)
	}
}

func TestMessageIDsAllocs(t *testing.T) {
	plain := slices.Concat(
		buildV2(t, v2Spec{records: testRecords("a", 50)}),
		buildV2(t, v2Spec{records: testRecords("b", 50)}))
	lz4 := slices.Concat(
		buildV2(t, v2Spec{codec: kgo.Lz4Compression(), records: testRecords("a", 50)}),
		buildV2(t, v2Spec{codec: kgo.Lz4Compression(), records: testRecords("b", 50)}))
	tests := []struct {
		name   string
		data   []byte
		header string
		max    float64
	}{
		{"count only", plain, "", 0},
		{"ids", plain, DefaultIDHeader, 2}, // the []string and the shared string
		{"absent header", plain, "nope", 0},
		{"lz4 ids", lz4, DefaultIDHeader, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			d.MessageIDs(tt.data, tt.header) // warm the buffers
			allocs := testing.AllocsPerRun(50, func() {
				if n, _, err := d.MessageIDs(tt.data, tt.header); n != 100 || err != nil {
					t.Fatal(n, err)
				}
			})
			if allocs > tt.max {
				t.Errorf("%v allocations per call, want at most %v", allocs, tt.max)
			}
		})
	}
}

func TestReader(t *testing.T) {
	seq := mixedSequence(t)
	var d Decoder
	want, _, err := collect(t, &d, seq)
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	for _, b := range want {
		largest = max(largest, b.Size)
	}
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"bytes", bytes.NewReader(seq)},
		{"one byte at a time", oneByteReader{bytes.NewReader(seq)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := d.NewReader(tt.r, 1000)
			for i := 0; ; i++ {
				b, err := r.Next()
				if err == io.EOF {
					if i != len(want) {
						t.Fatalf("EOF after %d batches, want %d", i, len(want))
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				w := want[i]
				w.Position += 1000
				if b.Position != w.Position || b.Size != w.Size || !bytes.Equal(b.Data, w.Data) || b.CRCValid != w.CRCValid {
					t.Fatalf("batch %d: %+v, want %+v", i, b, w)
				}
				n := 0
				for _, err := range d.Records(b) {
					if err != nil {
						t.Fatal(err)
					}
					n++
				}
				if c, _ := d.CountRecords(b); n != c {
					t.Errorf("batch %d: %d records, count %d", i, n, c)
				}
			}
			if _, err := r.Next(); err != io.EOF {
				t.Errorf("Next after EOF: %v", err)
			}
			if r.Pos() != 1000+int64(len(seq)) {
				t.Errorf("Pos %d", r.Pos())
			}
			if cap(r.buf) > max(readChunk, largest) {
				t.Errorf("buffer grew to %d, largest batch %d", cap(r.buf), largest)
			}
		})
	}
}

// TestReaderGrowth checks the window holds the largest batch and grows no
// further than needed for it (beyond its fixed readChunk), and that the
// MaxBatchSize cap applies.
func TestReaderGrowth(t *testing.T) {
	big := buildV2(t, v2Spec{records: []kmsg.Record{{Value: make([]byte, 300<<10)}}})
	small := buildV2(t, v2Spec{records: testRecords("a", 1)})
	seq := slices.Concat(small, big, small, big)
	var d Decoder
	r := d.NewReader(bytes.NewReader(seq), 0)
	for {
		if _, err := r.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if cap(r.buf) < len(big) || cap(r.buf) > max(readChunk, 2*len(big)) {
		t.Errorf("buffer capacity %d for a largest batch of %d", cap(r.buf), len(big))
	}

	capped := Decoder{MaxBatchSize: 100 << 10}
	r = capped.NewReader(bytes.NewReader(seq), 0)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(); err == nil || errors.Is(err, ErrTruncated) || !strings.Contains(err.Error(), "maximum batch size") {
		t.Errorf("error %v for a batch over MaxBatchSize", err)
	}
}

func TestReaderIOError(t *testing.T) {
	boom := errors.New("boom")
	seq := mixedSequence(t)
	var d Decoder
	r := d.NewReader(io.MultiReader(bytes.NewReader(seq[:100]), errReader{boom}), 0)
	_, err := r.Next()
	for err == nil {
		_, err = r.Next()
	}
	if !errors.Is(err, boom) || errors.Is(err, ErrTruncated) {
		t.Fatalf("error %v, want boom", err)
	}
	if _, again := r.Next(); again != err {
		t.Errorf("error not sticky: %v", again)
	}
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }
