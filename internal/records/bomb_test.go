package records

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"runtime"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// bomb compresses n zero bytes as a stream (no declared size), the way a
// hostile producer would hide a huge batch in a few KiB.
func bomb(t *testing.T, codec Codec, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w io.WriteCloser
	switch codec {
	case CodecGzip:
		w, _ = gzip.NewWriterLevel(&buf, gzip.BestCompression)
	case CodecLZ4:
		w = lz4.NewWriter(&buf)
	case CodecZstd:
		zw, err := zstd.NewWriter(&buf, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
		if err != nil {
			t.Fatal(err)
		}
		w = zw
	}
	zeros := make([]byte, 1<<20)
	for i := 0; i < n>>20; i++ {
		w.Write(zeros)
	}
	w.Close()
	return buf.Bytes()
}

// Decompression must stop at the limit, not allocate what the data expands
// to (512 MiB here) and check afterwards.
func TestDecompressionBombs(t *testing.T) {
	const expands = 512 << 20
	for _, codec := range []Codec{CodecGzip, CodecLZ4, CodecZstd} {
		t.Run(codec.String(), func(t *testing.T) {
			payload := bomb(t, codec, expands)
			b := kmsg.RecordBatch{Magic: 2, Attributes: int16(codec), NumRecords: 1, ProducerID: -1, ProducerEpoch: -1, FirstSequence: -1, Records: payload}
			data := b.AppendTo(nil)
			binary.BigEndian.PutUint32(data[8:], uint32(len(data)-12))
			binary.BigEndian.PutUint32(data[17:], crc32.Checksum(data[21:], crc32.MakeTable(crc32.Castagnoli)))

			d := &Decoder{MaxDecompressedSize: 16 << 20}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			var err error
			for batch, berr := range d.Batches(data) {
				if berr != nil {
					t.Fatal(berr)
				}
				for _, rerr := range d.Records(batch) {
					if rerr != nil {
						err = rerr
						break
					}
				}
			}
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("%d-byte %s batch expanding to %d bytes: err = %v, want ErrTooLarge", len(payload), codec, expands, err)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 128<<20 {
				t.Errorf("%d-byte %s batch: %d MiB allocated before rejecting it (limit 16 MiB)", len(payload), codec, allocated>>20)
			}
		})
	}
}
