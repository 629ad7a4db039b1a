package records

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// twoWalks is what the wire decoder read from a produce partition before
// SummarizeProduce: MessageIDs, then SummarizeHeaders over the same data.
func twoWalks(d *Decoder, data []byte, header string) ProduceSummary {
	n, ids, idsErr := d.MessageIDs(data, header)
	hs, hsErr := d.SummarizeHeaders(data)
	return ProduceSummary{Records: n, IDs: ids, IDsErr: idsErr, Headers: hs, HeadersErr: hsErr}
}

// fetchTwoWalks is what the wire decoder read from a fetch response
// partition before SummarizeFetch: MessageIDs, then Extent.
func fetchTwoWalks(d *Decoder, data []byte, header string) FetchSummary {
	n, ids, idsErr := d.MessageIDs(data, header)
	e, eErr := d.Extent(data)
	return FetchSummary{Records: n, IDs: ids, IDsErr: idsErr, Extent: e, ExtentErr: eErr}
}

// sameFetch says how one-walk summary got differs from two-walk want, ""
// when it does not (see sameSummary).
func sameFetch(got, want FetchSummary) string {
	if diff := sameSummary(ProduceSummary{Records: got.Records, IDs: got.IDs, IDsErr: got.IDsErr, HeadersErr: got.ExtentErr},
		ProduceSummary{Records: want.Records, IDs: want.IDs, IDsErr: want.IDsErr, HeadersErr: want.ExtentErr}); diff != "" {
		return diff
	}
	if got.Extent != want.Extent {
		return fmt.Sprintf("extent %+v, want %+v", got.Extent, want.Extent)
	}
	return ""
}

// sameSummary says how one-walk summary got differs from two-walk want,
// "" when it does not: the errors by text and by ErrTruncated, so that
// the wire decoder counts the same damage.
func sameSummary(got, want ProduceSummary) string {
	sameErr := func(a, b error) bool {
		return fmt.Sprint(a) == fmt.Sprint(b) && errors.Is(a, ErrTruncated) == errors.Is(b, ErrTruncated)
	}
	switch {
	case got.Records != want.Records || !slices.Equal(got.IDs, want.IDs):
		return fmt.Sprintf("records %d ids %q, want %d %q", got.Records, got.IDs, want.Records, want.IDs)
	case !sameErr(got.IDsErr, want.IDsErr):
		return fmt.Sprintf("ids error %v, want %v", got.IDsErr, want.IDsErr)
	case got.Headers != want.Headers:
		return fmt.Sprintf("headers %+v, want %+v", got.Headers, want.Headers)
	case !sameErr(got.HeadersErr, want.HeadersErr):
		return fmt.Sprintf("headers error %v, want %v", got.HeadersErr, want.HeadersErr)
	}
	return ""
}

// realSegments returns the record batches of the repository's log
// segments, written by real brokers: zstd batches with message ids, and a
// transactional producer's batches with their control batches.
func realSegments(tb testing.TB) map[string][]byte {
	tb.Helper()
	paths, err := filepath.Glob("../../testdata/segments/*/*.log")
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no segments in testdata (%v)", err)
	}
	out := make(map[string][]byte, len(paths))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			tb.Fatal(err)
		}
		out[filepath.Base(filepath.Dir(p))] = data
	}
	return out
}

// firstBatches returns the leading whole batches of data that fit in
// limit bytes (at least one).
func firstBatches(tb testing.TB, data []byte, limit int) []byte {
	tb.Helper()
	var d Decoder
	end := 0
	for b, err := range d.Batches(data) {
		if err != nil {
			tb.Fatal(err)
		}
		if end > 0 && int(b.Position)+b.Size > limit {
			break
		}
		end = int(b.Position) + b.Size
	}
	return data[:end]
}

// damaged returns data with the byte at i set to v.
func damaged(data []byte, i int, v byte) []byte {
	out := bytes.Clone(data)
	out[i] = v
	return out
}

// produceInputs is the table of TestOneWalkEqualsTwoWalks: real
// and built batch sequences, whole and damaged in the ways that stop
// one walk or both.
func produceInputs(t *testing.T) map[string][]byte {
	in := realSegments(t)
	mixed := mixedSequence(t)
	v2 := buildV2(t, v2Spec{producerID: 9, records: testRecords("p", 3)})
	zstd := buildV2(t, v2Spec{codec: kgo.ZstdCompression(), producerID: 9, records: testRecords("z", 3)})
	gzipWrapper := legacyWrapper(t, 1, 5, 0, 1000, kgo.GzipCompression(), legacyMsg(1, 0, 0, 1000, nil, []byte("v")))
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	in["mixed"] = mixed
	// A wrapper whose compressed value is garbage has a header all the
	// same: the ids stop there, the header summary goes on.
	badWrapper := damaged(gzipWrapper, len(gzipWrapper)-3, 0x55)
	in["wrapper that does not decompress, then batches"] = cat(v2, badWrapper, zstd, v2)
	// A zstd batch whose records do not decompress stops the ids only
	// when they are read (a header name).
	badZstd := damaged(zstd, v2HeaderLen+2, 0x00)
	in["zstd that does not decompress, then a batch"] = cat(v2, badZstd, v2)
	in["v2 record count beyond its bytes"] = cat(v2, func() []byte { b := bytes.Clone(v2); be.PutUint32(b[57:], 1000); return b }(), v2)
	in["v2 record bytes cut inside, length fixed"] = cat(v2, func() []byte {
		b := bytes.Clone(v2[:len(v2)-5])
		be.PutUint32(b[8:], uint32(len(b)-prefixLen))
		return b
	}(), zstd)
	in["hostile length"] = cat(v2, func() []byte { b := bytes.Clone(zstd); be.PutUint32(b[8:], 0x7fffffff); return b }())
	in["unknown magic"] = cat(v2, damaged(zstd, magicEnd-1, 7))
	in["garbage"] = bytes.Repeat([]byte{0xff}, 70)
	in["unknown codec 6 in a wrapper"] = cat(v2, damaged(gzipWrapper, 17, 6), v2)
	return in
}

// TestOneWalkEqualsTwoWalks: the wire decoder's one walk over a
// produce partition gives what MessageIDs and SummarizeHeaders give
// separately, and its one walk over a fetch response partition what
// MessageIDs and Extent give, on real segments and on every truncation and byte damage
// of them: the same records, ids, header summary and errors.
func TestOneWalkEqualsTwoWalks(t *testing.T) {
	for name, data := range produceInputs(t) {
		for _, header := range []string{"", DefaultIDHeader} {
			check := func(what string, data []byte) {
				t.Helper()
				var one, two Decoder
				if diff := sameSummary(one.SummarizeProduce(data, header), twoWalks(&two, data, header)); diff != "" {
					t.Fatalf("produce: %s, %s, header %q: %s", name, what, header, diff)
				}
				if diff := sameFetch(one.SummarizeFetch(data, header), fetchTwoWalks(&two, data, header)); diff != "" {
					t.Fatalf("fetch: %s, %s, header %q: %s", name, what, header, diff)
				}
			}
			check("whole", data)
			// Every truncation of the first KiB, then every 97th: the
			// first batches' headers, records and lengths, cheaply.
			for n := 0; n < len(data); n++ {
				if n < 1024 || n%97 == 0 {
					check(fmt.Sprintf("cut to %d bytes", n), data[:n])
				}
			}
			for i := 0; i < len(data); i++ {
				if i < 300 || i%31 == 0 {
					check(fmt.Sprintf("byte %d flipped", i), damaged(data, i, ^data[i]))
				}
			}
		}
	}
}

// TestOneWalkDivergence pins the case the one walk must get
// right: a batch whose records fail ends the record count and ids but
// not the header summary.
func TestOneWalkDivergence(t *testing.T) {
	v2 := buildV2(t, v2Spec{producerID: 9, records: testRecords("p", 3)})
	wrapper := legacyWrapper(t, 1, 5, 0, 1000, kgo.GzipCompression(), legacyMsg(1, 0, 0, 1000, nil, []byte("v")))
	data := bytes.Join([][]byte{v2, damaged(wrapper, len(wrapper)-3, 0x55), v2}, nil)
	var d Decoder
	s := d.SummarizeProduce(data, DefaultIDHeader)
	if s.Records != 3 || len(s.IDs) != 3 || s.IDsErr == nil || s.Headers.Batches != 3 || s.HeadersErr != nil || s.Headers.MinMagic != 1 {
		t.Fatalf("got %+v", s)
	}
	f := d.SummarizeFetch(data, DefaultIDHeader)
	if f.Records != 3 || len(f.IDs) != 3 || f.IDsErr == nil || f.Extent.Batches != 3 || f.ExtentErr != nil {
		t.Fatalf("got %+v", f)
	}
}

// TestOneWalkAllocates: one walk allocates what MessageIDs does,
// nothing with no header name.
func TestOneWalkAllocates(t *testing.T) {
	data := bytes.Repeat(buildV2(t, v2Spec{producerID: 3, records: testRecords("a", 2)}), 4)
	var d Decoder
	if n := testing.AllocsPerRun(100, func() { d.SummarizeProduce(data, "") }); n != 0 {
		t.Errorf("SummarizeProduce allocates %.1f times per call without ids, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { d.SummarizeFetch(data, "") }); n != 0 {
		t.Errorf("SummarizeFetch allocates %.1f times per call without ids, want 0", n)
	}
}

// BenchmarkFetchPartition is the wire decoder's reading of one fetch
// response partition of 8 batches, in two walks as before and in one.
func BenchmarkFetchPartition(b *testing.B) {
	data := bytes.Repeat(buildV2(b, v2Spec{producerID: 3, records: testRecords("a", 2)}), 8)
	var d Decoder
	for _, header := range []string{"", DefaultIDHeader} {
		b.Run("two-walks/header="+header, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				fetchTwoWalks(&d, data, header)
			}
		})
		b.Run("one-walk/header="+header, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d.SummarizeFetch(data, header)
			}
		})
	}
}

// BenchmarkProducePartition is the wire decoder's reading of one produce
// partition (one batch of one record, as under bench/agent.sh), in two
// walks as before and in one.
func BenchmarkProducePartition(b *testing.B) {
	data := buildV2(b, v2Spec{producerID: 3, records: testRecords("a", 1)})
	var d Decoder
	for _, header := range []string{"", DefaultIDHeader} {
		b.Run("two-walks/header="+header, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				twoWalks(&d, data, header)
			}
		})
		b.Run("one-walk/header="+header, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d.SummarizeProduce(data, header)
			}
		})
	}
}
