package records

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// FuzzBatches decodes arbitrary bytes, records included, every way the
// package offers, and checks the ways agree with one another.
func FuzzBatches(f *testing.F) {
	f.Add(mixedSequence(f))
	for _, c := range codecs {
		f.Add(buildV2(f, v2Spec{codec: c.codec, xerial: c.xerial, records: testRecords("s", 3)}))
	}
	f.Add(buildV2(f, v2Spec{attrs: attrControl | attrTransactional, records: testRecords("c", 1)}))
	f.Add(legacyWrapper(f, 0, 3, 0, 0, kgo.Lz4Compression(), legacyMsg(0, 2, 0, 0, nil, []byte("a")), legacyMsg(0, 3, 0, 0, []byte("k"), nil)))
	f.Add(legacyWrapper(f, 1, 9, attrTimestampType, 5, kgo.ZstdCompression(), legacyMsg(1, 0, 0, 1, nil, []byte("a"))))
	// The first batches of real segments: whole ones would leave the
	// fuzzer minimizing kilobytes instead of fuzzing.
	for _, seg := range realSegments(f) {
		f.Add(firstBatches(f, seg, 1024))
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		// A small limit keeps decompression bombs in the corpus cheap.
		d := Decoder{MaxDecompressedSize: 1 << 20}
		type summary struct {
			pos     int64
			size    int
			records int
		}
		var batches []summary
		var batchErr error
		total := 0
		recordsOK := true
		for b, err := range d.Batches(data) {
			if err != nil {
				batchErr = err
				break
			}
			if b.Size < prefixLen+minLengthV0 || int(b.Position)+b.Size > len(data) {
				t.Fatalf("batch %+v outside %d bytes of input", b, len(data))
			}
			n := 0
			var recErr error
			for r, err := range d.Records(b) {
				if err != nil {
					recErr = err
					break
				}
				if r.KeySize != len(r.Key) && r.KeySize != -1 || r.ValueSize != len(r.Value) && r.ValueSize != -1 {
					t.Fatalf("record sizes disagree: %+v", r)
				}
				n++
			}
			count, countErr := d.CountRecords(b)
			if recErr == nil {
				if countErr != nil || count != n {
					t.Fatalf("CountRecords = %d, %v after decoding %d records", count, countErr, n)
				}
			} else {
				recordsOK = false
				var e *Error
				if !errors.As(recErr, &e) || e.Pos != b.Position || errors.Is(recErr, ErrTruncated) {
					t.Fatalf("record error %v at batch position %d", recErr, b.Position)
				}
			}
			total += n
			batches = append(batches, summary{b.Position, b.Size, n})
		}

		// MessageIDs sees the same batch boundaries and, when every
		// batch's records decoded, the same record count.
		n, _, idErr := d.MessageIDs(data, DefaultIDHeader)
		if recordsOK && batchErr == nil && (idErr != nil || n != total) {
			t.Fatalf("MessageIDs = %d, %v; records decoded %d", n, idErr, total)
		}
		if recordsOK && batchErr != nil && (idErr == nil || errors.Is(idErr, ErrTruncated) != errors.Is(batchErr, ErrTruncated)) {
			t.Fatalf("MessageIDs error %v, Batches error %v", idErr, batchErr)
		}
		if _, ids, _ := d.MessageIDs(data, ""); ids != nil {
			t.Fatalf("ids without a header name: %q", ids)
		}

		// SummarizeHeaders counts the same batches, and fails where
		// Batches did.
		hs, hsErr := d.SummarizeHeaders(data)
		if hs.Batches != len(batches) || (hsErr == nil) != (batchErr == nil) {
			t.Fatalf("SummarizeHeaders = %d batches, %v; Batches found %d, %v", hs.Batches, hsErr, len(batches), batchErr)
		}

		// The wire decoder's one walk over a produce or fetch
		// partition gives what the two walks give.
		for _, header := range []string{"", DefaultIDHeader} {
			two := Decoder{MaxDecompressedSize: d.MaxDecompressedSize}
			if diff := sameSummary(d.SummarizeProduce(data, header), twoWalks(&two, data, header)); diff != "" {
				t.Fatalf("SummarizeProduce, header %q: %s", header, diff)
			}
			if diff := sameFetch(d.SummarizeFetch(data, header), fetchTwoWalks(&two, data, header)); diff != "" {
				t.Fatalf("SummarizeFetch, header %q: %s", header, diff)
			}
		}

		// Extent spans the same batches: the first one's start, the
		// last one's end.
		ext, extErr := d.Extent(data)
		if ext.Batches != len(batches) || (extErr == nil) != (batchErr == nil) {
			t.Fatalf("Extent = %d batches, %v; Batches found %d, %v", ext.Batches, extErr, len(batches), batchErr)
		}
		if len(batches) > 0 {
			firstB, _ := parseBatch(data[batches[0].pos:], batches[0].pos, d.maxBatchSize(), false)
			lastB, _ := parseBatch(data[batches[len(batches)-1].pos:], batches[len(batches)-1].pos, d.maxBatchSize(), false)
			if ext.FirstOffset != firstB.BaseOffset || ext.LastOffset != lastB.LastOffset || ext.MaxTimestamp != lastB.MaxTimestamp ||
				ext.FirstTimestamp != firstB.FirstTimestamp && !(firstB.DeleteHorizon && ext.FirstTimestamp == -1) {
				t.Fatalf("Extent %+v, first batch %+v, last %+v", ext, firstB, lastB)
			}
		}

		// The streaming reader finds the same batches and stops the
		// same way.
		r := d.NewReader(bytes.NewReader(data), 0)
		for i := 0; ; i++ {
			b, err := r.Next()
			if err != nil {
				if i != len(batches) {
					t.Fatalf("reader stopped after %d batches, want %d: %v", i, len(batches), err)
				}
				if (err == io.EOF) != (batchErr == nil) || errors.Is(err, ErrTruncated) != errors.Is(batchErr, ErrTruncated) {
					t.Fatalf("reader error %v, Batches error %v", err, batchErr)
				}
				break
			}
			if i >= len(batches) || b.Position != batches[i].pos || b.Size != batches[i].size {
				t.Fatalf("reader batch %d at %d size %d differs", i, b.Position, b.Size)
			}
		}
	})
}

// FuzzRecords wraps arbitrary bytes in a well-formed batch header, so that
// the fuzzer spends its time in record decoding and decompression rather
// than on getting batch lengths right.
func FuzzRecords(f *testing.F) {
	for _, c := range codecs {
		b := buildV2(f, v2Spec{codec: c.codec, xerial: c.xerial, records: testRecords("s", 3)})
		f.Add(uint8(2), uint8(c.want), int32(3), b[v2HeaderLen:])
	}
	inner := append(legacyMsg(1, 0, 0, 1, nil, []byte("a")), legacyMsg(1, 1, 0, 2, []byte("k"), nil)...)
	f.Add(uint8(1), uint8(CodecNone), int32(0), inner)
	w := legacyWrapper(f, 1, 1, 0, 2, kgo.GzipCompression(), inner)
	f.Add(uint8(1), uint8(CodecGzip), int32(0), w[magicEnd+1+8+4+4:])

	f.Fuzz(func(t *testing.T, magic, codec uint8, count int32, payload []byte) {
		var batch []byte
		if magic%2 == 0 {
			batch = compressedV2(Codec(codec%8), count, payload)
		} else {
			// A magic 1 wrapper whose value is payload.
			batch = legacyMsg(1, 5, int8(codec%8), 0, nil, payload)
		}
		d := Decoder{MaxDecompressedSize: 1 << 20}
		for b, err := range d.Batches(batch) {
			if err != nil {
				return // e.g. a count the bytes cannot hold
			}
			n := 0
			for _, err := range d.Records(b) {
				if err != nil {
					var e *Error
					if !errors.As(err, &e) || errors.Is(err, ErrTruncated) {
						t.Fatalf("record error %v", err)
					}
					return
				}
				n++
			}
			if c, err := d.CountRecords(b); err != nil || c != n {
				t.Fatalf("CountRecords = %d, %v after decoding %d records", c, err, n)
			}
			if got, _, err := d.MessageIDs(batch, DefaultIDHeader); err != nil || got != n {
				t.Fatalf("MessageIDs = %d, %v after decoding %d records", got, err, n)
			}
		}
	})
}
