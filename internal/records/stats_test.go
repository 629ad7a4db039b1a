package records

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestStats measures a sequence mixing every format and compares each
// size with what was encoded.
func TestStats(t *testing.T) {
	a := buildV2(t, v2Spec{baseOffset: 100, records: testRecords("a", 3), baseTimestamp: 1_700_000_000_000})
	b := buildV2(t, v2Spec{baseOffset: 103, codec: kgo.Lz4Compression(), records: testRecords("b", 4)})
	inner := [][]byte{
		legacyMsg(1, 0, 0, 1_600_000_000_000, []byte("k"), []byte("v0")),
		legacyMsg(1, 1, 0, 1_600_000_000_001, nil, []byte("v1")),
	}
	w := legacyWrapper(t, 1, 109, 0, 1_600_000_000_000, kgo.GzipCompression(), inner...)
	m := legacyMsg(0, 110, 0, 0, []byte("k0"), []byte("legacy v0"))
	seq := append(append(append(append([]byte{}, a...), b...), w...), m...)

	var d Decoder
	s, err := d.Stats(seq)
	if err != nil {
		t.Fatal(err)
	}
	// The uncompressed v2 batch's records part is what buildV2 encoded;
	// the lz4 batch decompresses to the same encoding of its records.
	bRaw := buildV2(t, v2Spec{baseOffset: 103, records: testRecords("b", 4)})
	wrapperValue := len(w) - 12 - 4 - 1 - 1 - 8 - 4 - 4 // offset+length, crc, magic, attributes, timestamp, null key, value length
	want := Stats{
		Batches: 4, Records: 3 + 4 + 2 + 1, Magic: 2, Compressed: 2,
		Bytes:             len(seq),
		RecordsBytes:      (len(a) - 61) + (len(b) - 61) + wrapperValue + len(m),
		UncompressedBytes: (len(a) - 61) + (len(bRaw) - 61) + len(inner[0]) + len(inner[1]) + len(m),
		NullKeys:          1,
		TimestampSpanMs:   20 + 30, // buildV2: 10 ms per record
	}
	for _, prefix := range []string{"a", "b"} {
		n := map[string]int{"a": 3, "b": 4}[prefix]
		for _, r := range testRecords(prefix, n) {
			want.KeyBytes += int64(len(r.Key))
			want.ValueBytes += int64(len(r.Value))
			for _, h := range r.Headers {
				want.Headers++
				want.HeaderBytes += int64(len(h.Key) + len(h.Value))
			}
		}
	}
	want.KeyBytes += 1 + 2       // "k", "k0"
	want.ValueBytes += 2 + 2 + 9 // "v0", "v1", "legacy v0"
	if s != want {
		t.Errorf("Stats =\n%+v, want\n%+v", s, want)
	}

	// A truncated sequence reports the batches before the cut.
	s, err = d.Stats(seq[:len(a)+10])
	if !errors.Is(err, ErrTruncated) || s.Batches != 1 || s.Records != 3 {
		t.Errorf("truncated: %+v, %v", s, err)
	}
}
