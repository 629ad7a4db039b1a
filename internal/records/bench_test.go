package records

import (
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// benchSequence is about 1 MB of records in 100-record batches, the shape
// of a busy produce request.
func benchSequence(b *testing.B, codec kgo.CompressionCodec) []byte {
	var seq []byte
	for i := range 20 {
		seq = append(seq, buildV2(b, v2Spec{baseOffset: int64(i) * 100, codec: codec, records: testRecords("b"+strconv.Itoa(i), 100)})...)
	}
	return seq
}

func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name  string
		codec kgo.CompressionCodec
	}{{"none", kgo.CompressionCodec{}}, {"lz4", kgo.Lz4Compression()}} {
		data := benchSequence(b, c.codec)
		b.Run(c.name+"/records", func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				for batch, err := range d.Batches(data) {
					if err != nil {
						b.Fatal(err)
					}
					for _, err := range d.Records(batch) {
						if err != nil {
							b.Fatal(err)
						}
						n++
					}
				}
				if n != 2000 {
					b.Fatal(n)
				}
			}
		})
		b.Run(c.name+"/message-ids", func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if n, ids, err := d.MessageIDs(data, DefaultIDHeader); err != nil || n != 2000 || len(ids) != 2000 {
					b.Fatal(n, len(ids), err)
				}
			}
		})
		b.Run(c.name+"/count", func(b *testing.B) {
			var d Decoder
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				if n, _, err := d.MessageIDs(data, ""); err != nil || n != 2000 {
					b.Fatal(n, err)
				}
			}
		})
	}
}
