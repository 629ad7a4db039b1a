package records

import (
	"bytes"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

func TestSummarizeHeaders(t *testing.T) {
	zstd := buildV2(t, v2Spec{codec: kgo.ZstdCompression(), producerID: 77, records: testRecords("z", 3)})
	lz4 := buildV2(t, v2Spec{codec: kgo.Lz4Compression(), producerID: 77, attrs: attrTransactional, records: testRecords("l", 2)})
	plain := buildV2(t, v2Spec{codec: kgo.NoCompression(), producerID: -1, records: testRecords("p", 1)})
	legacy := legacyMsg(1, 0, 0, 1000, nil, []byte("v"))
	gzipped := legacyWrapper(t, 1, 5, 0, 1000, kgo.GzipCompression(), legacyMsg(1, 0, 0, 1000, nil, []byte("v")))
	for _, c := range []struct {
		name    string
		data    []byte
		want    HeaderSummary
		codec   string
		wantErr bool
	}{
		{"none", nil, HeaderSummary{ProducerID: -1}, "", false},
		{"one zstd idempotent", zstd, HeaderSummary{Batches: 1, MinMagic: 2, Codecs: 1 << CodecZstd, ProducerID: 77}, "zstd", false},
		{"zstd then lz4 transactional", append(append([]byte(nil), zstd...), lz4...), HeaderSummary{Batches: 2, MinMagic: 2, Codecs: 1<<CodecZstd | 1<<CodecLZ4, ProducerID: 77, Transactional: true}, "mixed", false},
		{"plain", plain, HeaderSummary{Batches: 1, MinMagic: 2, Codecs: 1 << CodecNone, ProducerID: -1}, "none", false},
		{"magic 1 messages", append(append([]byte(nil), legacy...), gzipped...), HeaderSummary{Batches: 2, MinMagic: 1, Codecs: 1<<CodecNone | 1<<CodecGzip, ProducerID: -1}, "mixed", false},
		{"truncated second", append(append([]byte(nil), plain...), zstd[:30]...), HeaderSummary{Batches: 1, MinMagic: 2, Codecs: 1 << CodecNone, ProducerID: -1}, "none", true},
		{"garbage", bytes.Repeat([]byte{0xff}, 70), HeaderSummary{ProducerID: -1}, "", true},
	} {
		var d Decoder
		got, err := d.SummarizeHeaders(c.data)
		if got != c.want || (err != nil) != c.wantErr || got.Codec() != c.codec {
			t.Errorf("%s: got %+v (codec %q), %v; want %+v (codec %q), error %v", c.name, got, got.Codec(), err, c.want, c.codec, c.wantErr)
		}
	}
}
