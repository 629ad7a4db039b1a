package compare

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// Limits on an untrusted RESULT.json. A result has one small entry per
// second, so these allow runs of days; beyond them the file is refused
// before anything large is allocated.
const (
	// MaxFileSize bounds the file read.
	MaxFileSize = 64 << 20
	// MaxSeconds bounds the per-second series (11.5 days).
	MaxSeconds = 1_000_000
	// MaxSeries bounds the latency series of the result and of each second.
	MaxSeries = 8
	// MaxHistogramText bounds one encoded histogram (a 3-digit, 1 µs to 1
	// hour histogram encodes to a few KiB).
	MaxHistogramText = 4 << 20
	// maxHistogramCounts bounds the counts array a histogram header may
	// declare (32 MiB): 1 µs to a day at 5 significant digits fits.
	maxHistogramCounts = 1 << 22
	// maxSecondHistogramCounts bounds a per-second histogram's counts
	// array: bench writes them at 2 significant digits from 1 µs to an
	// hour (about 3 300 counts). There may be hundreds of thousands of
	// them, and each is walked bucket by bucket.
	maxSecondHistogramCounts = 1 << 13
)

// Load reads and checks a RESULT.json, a regular file (a FIFO, a device
// or a directory is refused, never waited on or read without end).
// Errors are one line and name the file.
func Load(path string) (*bench.Result, error) {
	data, err := safefile.ReadRegular(path, MaxFileSize)
	if err != nil {
		return nil, err // names the file
	}
	r, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// Parse decodes and checks the bytes of a RESULT.json: the version, the
// size limits, every number that cannot be negative, every histogram of
// the run against the percentiles stored beside it, and every per-second
// histogram against its count.
func Parse(data []byte) (*bench.Result, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("larger than %d MiB: not a kscope bench result", MaxFileSize>>20)
	}
	var v struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("not a kscope bench result: %w", err)
	}
	if v.Version == nil {
		return nil, errors.New("not a kscope bench result: no version")
	}
	if *v.Version != bench.ResultVersion {
		return nil, fmt.Errorf("result version %d; this kscope reads version %d", *v.Version, bench.ResultVersion)
	}
	// The series is decoded one second at a time so that its length is
	// checked before it is allocated: "{}," is 3 bytes of JSON but a
	// Second in memory is twenty times that. (The shallower Series field
	// shadows the embedded one.)
	var env struct {
		bench.Result
		Series json.RawMessage `json:"series"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("damaged result: %w", err)
	}
	r := env.Result
	series, err := parseSeries(env.Series)
	if err != nil {
		return nil, err
	}
	r.Series = series
	if err := check(&r); err != nil {
		return nil, fmt.Errorf("damaged result: %w", err)
	}
	return &r, nil
}

func parseSeries(raw json.RawMessage) ([]bench.Second, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("damaged result: series: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, errors.New("damaged result: series is not an array")
	}
	var out []bench.Second
	for dec.More() {
		if len(out) == MaxSeconds {
			return nil, fmt.Errorf("damaged result: more than %d seconds in the series", MaxSeconds)
		}
		var s bench.Second
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("damaged result: series[%d]: %w", len(out), err)
		}
		if len(s.Latency) > MaxSeries {
			return nil, fmt.Errorf("damaged result: series[%d]: %d latency series (at most %d)", len(out), len(s.Latency), MaxSeries)
		}
		out = append(out, s)
	}
	return out, nil
}

// check rejects what a writer cannot have produced. Compare relies on it:
// no nil latency, no negative counts, histograms that agree with the
// percentiles, and a per-second series that agrees with the totals.
func check(r *bench.Result) error {
	if err := checkTotals(r.Totals); err != nil {
		return err
	}
	sums, err := checkSecondsLatency(r.Series)
	if err != nil {
		return err
	}
	if len(r.Latency) > MaxSeries {
		return fmt.Errorf("%d latency series (at most %d)", len(r.Latency), MaxSeries)
	}
	for _, name := range sortedKeys(r.Latency) {
		if err := checkLatency(r.Latency[name]); err != nil {
			return fmt.Errorf("latency.%s: %w", name, err)
		}
	}
	return checkSeries(r, sums)
}

func checkTotals(t bench.Totals) error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"sent", float64(t.Sent)}, {"acked", float64(t.Acked)}, {"failed", float64(t.Failed)},
		{"consumed", float64(t.Consumed)}, {"lost", float64(t.Lost)}, {"duplicated", float64(t.Duplicated)},
		{"bytes", float64(t.Bytes)}, {"msgs_per_sec", t.MsgsPerSec}, {"mb_per_sec", t.MBPerSec},
		{"client_cpu_seconds", t.ClientCPUSeconds}, {"client_cpu_per_msg_us", t.ClientCPUPerMsgUs},
	} {
		if f.v < 0 {
			return fmt.Errorf("totals.%s is negative", f.name)
		}
	}
	return nil
}

// checkSecondsLatency checks every second's counts and histograms, and
// sums each latency series over the seconds (its histograms merged) for
// checkSeries.
func checkSecondsLatency(series []bench.Second) (map[string]*seriesSum, error) {
	sums := map[string]*seriesSum{}
	for i, s := range series {
		if s.Sent < 0 || s.Acked < 0 || s.Consumed < 0 || s.Errors < 0 || s.MsgsPerSec < 0 || s.MBPerSec < 0 {
			return nil, fmt.Errorf("series[%d]: negative count or rate", i)
		}
		for _, name := range sortedKeys(s.Latency) {
			sum := sums[name]
			if sum == nil {
				sum = &seriesSum{hists: true, buckets: map[[2]int64]int64{}}
				sums[name] = sum
			}
			if err := addSecond(sum, s.Latency[name]); err != nil {
				return nil, fmt.Errorf("series[%d].latency.%s: %w", i, name, err)
			}
		}
	}
	return sums, nil
}

// addSecond checks one second of a latency series and adds it to sum.
func addSecond(sum *seriesSum, l bench.SecondLatency) error {
	if l.Count < 0 || l.P50Us < 0 || l.P99Us < 0 || l.MaxUs < 0 {
		return errors.New("negative value")
	}
	sum.count = addSat(sum.count, l.Count)
	if l.Histogram == "" {
		sum.hists = sum.hists && l.Count == 0
		return nil
	}
	h, err := decodeSecond(l.Histogram)
	if err != nil {
		return err
	}
	if h.TotalCount() != l.Count {
		return fmt.Errorf("histogram holds %d values, count says %d", h.TotalCount(), l.Count)
	}
	for _, b := range h.Distribution() {
		if b.Count > 0 {
			sum.buckets[[2]int64{b.From, b.To}] += b.Count
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// quantiles are the stored percentiles and where they are in a Latency.
var quantiles = []struct {
	name string
	q    float64 // 0..100; 100 is the maximum
	get  func(*bench.Latency) int64
}{
	{"p50", 50, func(l *bench.Latency) int64 { return l.P50Us }},
	{"p90", 90, func(l *bench.Latency) int64 { return l.P90Us }},
	{"p99", 99, func(l *bench.Latency) int64 { return l.P99Us }},
	{"p99.9", 99.9, func(l *bench.Latency) int64 { return l.P999Us }},
	{"p99.99", 99.99, func(l *bench.Latency) int64 { return l.P9999Us }},
	{"max", 100, func(l *bench.Latency) int64 { return l.MaxUs }},
}

func checkLatency(l *bench.Latency) error {
	if l == nil {
		return errors.New("null")
	}
	if l.Count < 0 || l.MeanUs < 0 {
		return errors.New("negative count or mean")
	}
	for _, q := range quantiles {
		if q.get(l) < 0 {
			return fmt.Errorf("%s is negative", q.name)
		}
	}
	if l.Histogram == "" {
		return nil // nothing to verify (hand-made results)
	}
	h, err := DecodeHistogram(l.Histogram)
	if err != nil {
		return err
	}
	return verify(l, h)
}

// verify checks that the histogram is the one the percentiles were read
// from: same count, and each stored percentile in the same histogram
// bucket as the decoded one (a writer may keep the exact maximum, which
// the histogram rounds to its bucket).
func verify(l *bench.Latency, h *hdrhistogram.Histogram) error {
	if h.TotalCount() != l.Count {
		return fmt.Errorf("histogram holds %d values, count says %d", h.TotalCount(), l.Count)
	}
	if l.Count == 0 {
		return nil
	}
	for _, q := range quantiles {
		var got int64
		if q.q == 100 {
			got = h.Max()
		} else {
			got = h.ValueAtQuantile(q.q)
		}
		if want := q.get(l); got != want && !h.ValuesAreEquivalent(got, want) {
			return fmt.Errorf("histogram's %s is %d µs, the stored %s is %d µs", q.name, got, q.name, want)
		}
	}
	return nil
}

// DecodeHistogram decodes a histogram in HdrHistogram's compressed base64
// form from an untrusted file. The header is read first so that a small
// input declaring a huge histogram (hdrhistogram.Decode allocates the
// whole counts array the header asks for, and inflates the payload it
// declares) is refused before any large allocation.
func DecodeHistogram(text string) (h *hdrhistogram.Histogram, err error) {
	return decodeHistogram(text, maxHistogramCounts)
}

func decodeHistogram(text string, maxCounts int64) (h *hdrhistogram.Histogram, err error) {
	if len(text) > MaxHistogramText {
		return nil, fmt.Errorf("histogram: %d bytes of base64 (at most %d)", len(text), MaxHistogramText)
	}
	if err := checkHistogramHeader(text, maxCounts); err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	// The decoder is hardened and fuzzed; this is the last line of defence
	// for a file from anywhere.
	defer func() {
		if p := recover(); p != nil {
			h, err = nil, fmt.Errorf("histogram: undecodable (%v)", p)
		}
	}()
	h, err = hdrhistogram.Decode([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("histogram: %w", err)
	}
	return h, nil
}

// decodeSecond decodes a per-second histogram, whose geometry is bounded
// tighter than a run's.
func decodeSecond(text string) (*hdrhistogram.Histogram, error) {
	return decodeHistogram(text, maxSecondHistogramCounts)
}

func checkHistogramHeader(text string, maxCounts int64) error {
	// The outer header (cookie, compressed length) and the first bytes of
	// the zlib stream, enough to inflate the 40-byte inner header.
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return fmt.Errorf("not base64: %w", err)
	}
	if len(raw) < 8 {
		return errors.New("truncated")
	}
	if cookie := int32(binary.BigEndian.Uint32(raw)) &^ 0xf0; cookie != hdrhistogram.V2CompressedEncodingCookieBase {
		return fmt.Errorf("not a compressed V2 HdrHistogram (cookie %#x)", uint32(cookie))
	}
	z, err := zlib.NewReader(bytes.NewReader(raw[8:]))
	if err != nil {
		return fmt.Errorf("compressed contents: %w", err)
	}
	defer z.Close()
	var hdr [hdrhistogram.ENCODING_HEADER_SIZE]byte
	if _, err := io.ReadFull(z, hdr[:]); err != nil {
		return fmt.Errorf("header: %w", err)
	}
	payload := int32(binary.BigEndian.Uint32(hdr[4:]))
	digits := int32(binary.BigEndian.Uint32(hdr[12:]))
	lowest := int64(binary.BigEndian.Uint64(hdr[16:]))
	highest := int64(binary.BigEndian.Uint64(hdr[24:]))
	n, err := countsLen(lowest, highest, digits)
	if err != nil {
		return err
	}
	if n > maxCounts {
		return fmt.Errorf("header declares %d counts (range %d..%d at %d digits; at most %d)", n, lowest, highest, digits, maxCounts)
	}
	if payload < 0 || int64(payload) > n*9 {
		return fmt.Errorf("header declares a payload of %d bytes for %d counts", payload, n)
	}
	return nil
}

// countsLen is the length of the counts array hdrhistogram allocates for a
// decoded header (the library's geometry, which it does not export).
func countsLen(lowest, highest int64, digits int32) (int64, error) {
	if digits < 0 || digits > 5 {
		return 0, fmt.Errorf("%d significant digits (0 to 5)", digits)
	}
	if lowest < 1 {
		lowest = 1
	}
	subBucketCountMag := int32(math.Ceil(math.Log2(2 * math.Pow10(int(digits)))))
	subBucketHalfCountMag := max(subBucketCountMag, 1) - 1
	unitMag := max(int32(math.Floor(math.Log2(float64(lowest)))), 0)
	if unitMag+subBucketHalfCountMag > 61 {
		return 0, fmt.Errorf("lowest value %d too large for %d digits", lowest, digits)
	}
	subBucketCount := int64(1) << (subBucketHalfCountMag + 1)
	smallestUntrackable := subBucketCount << unitMag
	buckets := int64(1)
	for smallestUntrackable <= highest {
		if smallestUntrackable > math.MaxInt64/2 {
			buckets++
			break
		}
		smallestUntrackable <<= 1
		buckets++
	}
	return (buckets + 1) * (subBucketCount / 2), nil
}

// MergeLatency merges one latency series of several results into one
// histogram, for the distribution over all runs (percentiles of merged
// runs cannot be computed from the runs' percentiles). Results without the
// series are skipped; a result with the series but no histogram is an
// error.
func MergeLatency(rs []*bench.Result, series string) (*bench.Latency, error) {
	var merged *hdrhistogram.Histogram
	for i, r := range rs {
		l := r.Latency[series]
		if l == nil {
			continue
		}
		if l.Histogram == "" {
			return nil, fmt.Errorf("run %d: latency.%s has no histogram to merge", i+1, series)
		}
		h, err := DecodeHistogram(l.Histogram)
		if err != nil {
			return nil, fmt.Errorf("run %d: latency.%s: %w", i+1, series, err)
		}
		if merged == nil {
			merged = h
			continue
		}
		// Merge into the wider of the two so that no value is dropped.
		if h.HighestTrackableValue() > merged.HighestTrackableValue() ||
			(h.HighestTrackableValue() == merged.HighestTrackableValue() && h.SignificantFigures() > merged.SignificantFigures()) {
			merged, h = h, merged
		}
		if dropped := merged.Merge(h); dropped > 0 {
			return nil, fmt.Errorf("run %d: latency.%s: %d values outside the merged histogram's range", i+1, series, dropped)
		}
	}
	if merged == nil {
		return nil, nil
	}
	return latencyOf(merged)
}

func latencyOf(h *hdrhistogram.Histogram) (*bench.Latency, error) {
	enc, err := h.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		return nil, fmt.Errorf("encode merged histogram: %w", err)
	}
	return &bench.Latency{
		Count: h.TotalCount(), MeanUs: h.Mean(),
		P50Us: h.ValueAtQuantile(50), P90Us: h.ValueAtQuantile(90), P99Us: h.ValueAtQuantile(99),
		P999Us: h.ValueAtQuantile(99.9), P9999Us: h.ValueAtQuantile(99.99), MaxUs: h.Max(),
		Histogram: string(enc),
	}, nil
}
