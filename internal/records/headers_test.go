package records

import (
	"bytes"
	"errors"
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

func TestExtent(t *testing.T) {
	first := buildV2(t, v2Spec{baseOffset: 100, baseTimestamp: 1_700_000_000_000, records: testRecords("a", 3)})
	second := buildV2(t, v2Spec{baseOffset: 103, baseTimestamp: 1_700_000_001_000, codec: kgo.ZstdCompression(), records: testRecords("b", 4)})
	horizon := buildV2(t, v2Spec{baseOffset: 7, baseTimestamp: 1_800_000_000_000, attrs: attrDeleteHorizon, records: testRecords("h", 2)})
	wrapper := legacyWrapper(t, 1, 9, 0, 1_600_000_000_000, kgo.GzipCompression(), legacyMsg(1, 0, 0, 1_600_000_000_000, nil, []byte("v")), legacyMsg(1, 1, 0, 1_600_000_000_001, nil, []byte("w")))
	magic0 := legacyMsg(0, 110, 0, 0, []byte("k"), []byte("v"))
	hostile := append([]byte(nil), first...)
	be.PutUint32(hostile[8:], 0x7fffffff) // a length no batch can have
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	none := Extent{FirstOffset: -1, LastOffset: -1, FirstTimestamp: -1, MaxTimestamp: -1}
	for _, c := range []struct {
		name          string
		data          []byte
		want          Extent
		wantErr       bool
		wantTruncated bool
	}{
		{"nothing", nil, none, false, false},
		{"one batch", first, Extent{1, 100, 102, 1_700_000_000_000, 1_700_000_000_020}, false, false},
		{"two batches: the first's start, the last's end", cat(first, second), Extent{2, 100, 106, 1_700_000_000_000, 1_700_000_001_030}, false, false},
		{"partial trailing batch, header whole: not counted", cat(first, second[:v2HeaderLen+5]), Extent{1, 100, 102, 1_700_000_000_000, 1_700_000_000_020}, true, true},
		{"partial trailing batch, header cut", cat(first, second[:20]), Extent{1, 100, 102, 1_700_000_000_000, 1_700_000_000_020}, true, true},
		{"only a partial batch", second[:len(second)-1], none, true, true},
		{"hostile length after a whole batch", cat(first, hostile), Extent{1, 100, 102, 1_700_000_000_000, 1_700_000_000_020}, true, false},
		{"delete horizon: no first timestamp", horizon, Extent{1, 7, 8, -1, 1_800_000_000_010}, false, false},
		{"magic 1 wrapper first: its first offset unknown", cat(wrapper, first), Extent{2, -1, 102, 1_600_000_000_000, 1_700_000_000_020}, false, false},
		{"magic 0: no timestamps", magic0, Extent{1, 110, 110, -1, -1}, false, false},
		{"garbage", bytes.Repeat([]byte{0xff}, 70), none, true, false},
	} {
		var d Decoder
		got, err := d.Extent(c.data)
		if got != c.want || (err != nil) != c.wantErr || errors.Is(err, ErrTruncated) != c.wantTruncated {
			t.Errorf("%s: got %+v, %v; want %+v, error %v (truncated %v)", c.name, got, err, c.want, c.wantErr, c.wantTruncated)
		}
	}
}

// TestExtentAllocates: the wire decoder calls Extent for every partition
// of every fetch response.
func TestExtentAllocates(t *testing.T) {
	data := bytes.Repeat(buildV2(t, v2Spec{baseOffset: 5, records: testRecords("a", 2)}), 10)
	var d Decoder
	if n := testing.AllocsPerRun(100, func() { d.Extent(data) }); n != 0 {
		t.Errorf("Extent allocates %.1f times per call, want 0", n)
	}
}
