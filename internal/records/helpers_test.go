package records

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"strconv"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// v2Spec describes a magic 2 batch for buildV2. Records get offset deltas
// 0..n-1 and timestamp deltas of 10ms each.
type v2Spec struct {
	baseOffset    int64
	codec         kgo.CompressionCodec
	xerial        bool // frame snappy the way the Java client does
	attrs         int16
	baseTimestamp int64
	producerID    int64
	producerEpoch int16
	baseSequence  int32
	leaderEpoch   int32
	records       []kmsg.Record
}

// testRecords returns n records with keys, values and a message-id header
// (plus a second header on odd records), ids prefixed by prefix.
func testRecords(prefix string, n int) []kmsg.Record {
	recs := make([]kmsg.Record, n)
	for i := range recs {
		id := prefix + "-" + strconv.Itoa(i)
		recs[i] = kmsg.Record{
			Key:     []byte("key-" + strconv.Itoa(i)),
			Value:   bytes.Repeat([]byte("value "+id+" "), 5),
			Headers: []kmsg.Header{{Key: "message-id", Value: []byte(id)}},
		}
		if i%2 == 1 {
			recs[i].Headers = append(recs[i].Headers, kmsg.Header{Key: "trace", Value: []byte("t" + strconv.Itoa(i))})
		}
	}
	return recs
}

// buildV2 encodes a magic 2 batch with kmsg, compresses its records with
// kgo's compressor, and fills in the length and CRC-32C.
func buildV2(tb testing.TB, s v2Spec) []byte {
	tb.Helper()
	var raw []byte
	for i := range s.records {
		r := s.records[i]
		r.OffsetDelta = int32(i)
		r.TimestampDelta64 = int64(i) * 10
		r.Length = 0
		body := len(r.AppendTo(nil)) - 1 // a zero length is one varint byte
		r.Length = int32(body)
		raw = r.AppendTo(raw)
	}
	attrs := s.attrs
	if s.codec != (kgo.CompressionCodec{}) && len(raw) > 0 {
		comp, err := kgo.DefaultCompressor(s.codec)
		if err != nil {
			tb.Fatal(err)
		}
		var codec kgo.CompressionCodecType
		if s.xerial {
			raw, codec = xerialFrame(tb, comp, raw), kgo.CodecSnappy
		} else {
			var buf bytes.Buffer
			var out []byte
			out, codec = comp.Compress(&buf, raw)
			raw = bytes.Clone(out)
		}
		attrs |= int16(codec)
	}
	n := int32(len(s.records))
	b := kmsg.RecordBatch{
		FirstOffset:          s.baseOffset,
		PartitionLeaderEpoch: s.leaderEpoch,
		Magic:                2,
		Attributes:           attrs,
		LastOffsetDelta:      max(n-1, 0),
		FirstTimestamp:       s.baseTimestamp,
		MaxTimestamp:         s.baseTimestamp + int64(max(n-1, 0))*10,
		ProducerID:           s.producerID,
		ProducerEpoch:        s.producerEpoch,
		FirstSequence:        s.baseSequence,
		NumRecords:           n,
		Records:              raw,
	}
	out := b.AppendTo(nil)
	binary.BigEndian.PutUint32(out[8:], uint32(len(out)-12))
	binary.BigEndian.PutUint32(out[17:], crc32.Checksum(out[21:], crc32.MakeTable(crc32.Castagnoli)))
	return out
}

// xerialFrame frames src as snappy-java's stream does: a header, then
// blocks each behind a big-endian length. The blocks are compressed by
// kgo's compressor, which writes raw snappy; the framing is built here
// with small blocks so that there are several.
func xerialFrame(tb testing.TB, comp kgo.Compressor, src []byte) []byte {
	tb.Helper()
	out := append([]byte{}, xerialMagic...)
	out = binary.BigEndian.AppendUint32(out, 1)
	out = binary.BigEndian.AppendUint32(out, 1)
	for len(src) > 0 {
		n := min(len(src), 100)
		var buf bytes.Buffer
		block, codec := comp.Compress(&buf, src[:n])
		if codec != kgo.CodecSnappy {
			tb.Fatalf("compressor used codec %d, want snappy", codec)
		}
		out = binary.BigEndian.AppendUint32(out, uint32(len(block)))
		out = append(out, block...)
		src = src[n:]
	}
	return out
}

// legacyMsg hand-encodes one magic 0 or 1 message with its CRC-32.
func legacyMsg(magic int8, offset int64, attrs int8, ts int64, key, value []byte) []byte {
	var m []byte
	m = binary.BigEndian.AppendUint64(m, uint64(offset))
	m = binary.BigEndian.AppendUint32(m, 0) // length, below
	m = binary.BigEndian.AppendUint32(m, 0) // crc, below
	m = append(m, byte(magic), byte(attrs))
	if magic == 1 {
		m = binary.BigEndian.AppendUint64(m, uint64(ts))
	}
	for _, b := range [][]byte{key, value} {
		if b == nil {
			m = binary.BigEndian.AppendUint32(m, 0xffffffff)
			continue
		}
		m = binary.BigEndian.AppendUint32(m, uint32(len(b)))
		m = append(m, b...)
	}
	binary.BigEndian.PutUint32(m[8:], uint32(len(m)-12))
	binary.BigEndian.PutUint32(m[12:], crc32.ChecksumIEEE(m[16:]))
	return m
}

// legacyWrapper compresses the inner messages with kgo's compressor and
// wraps them in a message of the given magic and offset.
func legacyWrapper(tb testing.TB, magic int8, offset int64, attrs int8, ts int64, codec kgo.CompressionCodec, inner ...[]byte) []byte {
	tb.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	out, used := comp.Compress(&buf, bytes.Join(inner, nil))
	return legacyMsg(magic, offset, attrs|int8(used), ts, nil, bytes.Clone(out))
}

// codecs lists the codecs the tests build batches with.
var codecs = []struct {
	name   string
	codec  kgo.CompressionCodec
	xerial bool
	want   Codec
}{
	{"none", kgo.CompressionCodec{}, false, CodecNone},
	{"gzip", kgo.GzipCompression(), false, CodecGzip},
	{"snappy", kgo.SnappyCompression(), false, CodecSnappy},
	{"snappy-xerial", kgo.SnappyCompression(), true, CodecSnappy},
	{"lz4", kgo.Lz4Compression(), false, CodecLZ4},
	{"zstd", kgo.ZstdCompression(), false, CodecZstd},
}

// mixedSequence returns a batch sequence mixing all formats, for the
// truncation, reader and fuzz tests.
func mixedSequence(tb testing.TB) []byte {
	tb.Helper()
	var seq []byte
	seq = append(seq, buildV2(tb, v2Spec{baseOffset: 100, records: testRecords("a", 3), baseTimestamp: 1_700_000_000_000})...)
	seq = append(seq, buildV2(tb, v2Spec{baseOffset: 103, codec: kgo.Lz4Compression(), records: testRecords("b", 4), producerID: 7, baseSequence: 3})...)
	seq = append(seq, legacyWrapper(tb, 1, 109, 0, 1_600_000_000_000, kgo.GzipCompression(),
		legacyMsg(1, 0, 0, 1_600_000_000_000, []byte("k"), []byte("v0")),
		legacyMsg(1, 1, 0, 1_600_000_000_001, nil, []byte("v1")),
	)...)
	seq = append(seq, legacyMsg(0, 110, 0, 0, []byte("k0"), []byte("legacy v0"))...)
	seq = append(seq, buildV2(tb, v2Spec{baseOffset: 111, codec: kgo.ZstdCompression(), records: testRecords("c", 2)})...)
	return seq
}
