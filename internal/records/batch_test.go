package records

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// collect decodes every batch of data and every record of each batch.
func collect(tb testing.TB, d *Decoder, data []byte) ([]Batch, [][]Record, error) {
	tb.Helper()
	var batches []Batch
	var recs [][]Record
	for b, err := range d.Batches(data) {
		if err != nil {
			return batches, recs, err
		}
		batches = append(batches, b)
		var rs []Record
		for r, err := range d.Records(b) {
			if err != nil {
				return batches, recs, err
			}
			c := *r
			c.Headers = slices.Clone(r.Headers)
			for i := range c.Headers {
				c.Headers[i].Value = bytes.Clone(c.Headers[i].Value)
			}
			c.Key, c.Value = bytes.Clone(r.Key), bytes.Clone(r.Value)
			rs = append(rs, c)
		}
		recs = append(recs, rs)
	}
	return batches, recs, nil
}

func TestV2Codecs(t *testing.T) {
	for _, c := range codecs {
		t.Run(c.name, func(t *testing.T) {
			first := buildV2(t, v2Spec{
				baseOffset: 1000, codec: c.codec, xerial: c.xerial,
				baseTimestamp: 1_700_000_000_000, producerID: 42, producerEpoch: 3,
				baseSequence: 17, leaderEpoch: 9, records: testRecords("x", 5),
			})
			second := buildV2(t, v2Spec{
				baseOffset: 1005, codec: c.codec, xerial: c.xerial, attrs: attrTransactional,
				baseTimestamp: 1_700_000_001_000, producerID: -1, producerEpoch: -1,
				baseSequence: -1, leaderEpoch: 9, records: testRecords("y", 2),
			})
			data := append(slices.Clone(first), second...)

			var d Decoder
			batches, recs, err := collect(t, &d, data)
			if err != nil {
				t.Fatal(err)
			}
			if len(batches) != 2 {
				t.Fatalf("got %d batches, want 2", len(batches))
			}
			b := batches[0]
			want := Batch{
				Position: 0, Size: len(first), Data: b.Data, Magic: 2, Attributes: int16(c.want),
				Codec: c.want, BaseOffset: 1000, LastOffset: 1004, NumRecords: 5,
				CRC: be.Uint32(first[17:]), CRCValid: true,
				ProducerID: 42, ProducerEpoch: 3, BaseSequence: 17, PartitionLeaderEpoch: 9,
				TimestampType: CreateTime, FirstTimestamp: 1_700_000_000_000, MaxTimestamp: 1_700_000_000_040,
			}
			if fmt.Sprint(b) != fmt.Sprint(want) {
				t.Errorf("batch 0:\n got %+v\nwant %+v", b, want)
			}
			if b2 := batches[1]; b2.Position != int64(len(first)) || b2.Size != len(second) ||
				!b2.Transactional || b2.Control || b2.BaseOffset != 1005 || b2.LastOffset != 1006 ||
				b2.NumRecords != 2 || !b2.CRCValid || b2.ProducerID != -1 {
				t.Errorf("batch 1: %+v", b2)
			}
			for i, r := range recs[0] {
				id := "x-" + strconv.Itoa(i)
				if r.Offset != 1000+int64(i) || r.Timestamp != 1_700_000_000_000+int64(i)*10 ||
					string(r.Key) != "key-"+strconv.Itoa(i) || r.KeySize != len(r.Key) ||
					!strings.Contains(string(r.Value), id) || r.ValueSize != len(r.Value) ||
					r.Headers[0].Key != "message-id" || string(r.Headers[0].Value) != id {
					t.Errorf("record %d: %+v", i, r)
				}
				if wantHeaders := 1 + i%2; len(r.Headers) != wantHeaders {
					t.Errorf("record %d: %d headers, want %d", i, len(r.Headers), wantHeaders)
				}
			}
			n, ids, err := d.MessageIDs(data, DefaultIDHeader)
			if err != nil || n != 7 || strings.Join(ids, ",") != "x-0,x-1,x-2,x-3,x-4,y-0,y-1" {
				t.Errorf("MessageIDs = %d, %q, %v", n, ids, err)
			}
			n, ids, err = d.MessageIDs(data, "trace")
			if err != nil || n != 7 || strings.Join(ids, ",") != "t1,t3,t1" {
				t.Errorf("MessageIDs(trace) = %d, %q, %v", n, ids, err)
			}
			n, ids, err = d.MessageIDs(data, "")
			if err != nil || n != 7 || ids != nil {
				t.Errorf("MessageIDs(\"\") = %d, %q, %v", n, ids, err)
			}
		})
	}
}

func TestV2Attributes(t *testing.T) {
	null := []kmsg.Record{{Key: nil, Value: nil, Headers: []kmsg.Header{{Key: "message-id"}, {Key: "h", Value: []byte{}}}}}
	tests := []struct {
		name  string
		spec  v2Spec
		check func(*testing.T, Batch, []Record)
	}{
		{"log append time", v2Spec{attrs: attrTimestampType, baseTimestamp: 5, records: testRecords("a", 3)},
			func(t *testing.T, b Batch, rs []Record) {
				if b.TimestampType != LogAppendTime {
					t.Errorf("timestamp type %v", b.TimestampType)
				}
				for _, r := range rs {
					if r.Timestamp != b.MaxTimestamp {
						t.Errorf("record timestamp %d, want the batch max %d", r.Timestamp, b.MaxTimestamp)
					}
				}
			}},
		{"control", v2Spec{attrs: attrControl | attrTransactional, records: []kmsg.Record{{Key: []byte{0, 0, 0, 1}, Value: []byte{0, 0, 0, 0, 0, 0}}}},
			func(t *testing.T, b Batch, rs []Record) {
				if !b.Control || !b.Transactional || len(rs) != 1 {
					t.Errorf("batch %+v, %d records", b, len(rs))
				}
			}},
		{"delete horizon", v2Spec{attrs: attrDeleteHorizon, records: testRecords("a", 1)},
			func(t *testing.T, b Batch, _ []Record) {
				if !b.DeleteHorizon {
					t.Error("DeleteHorizon not set")
				}
			}},
		{"empty batch", v2Spec{baseOffset: 50},
			func(t *testing.T, b Batch, rs []Record) {
				if b.NumRecords != 0 || len(rs) != 0 || b.LastOffset != 50 {
					t.Errorf("batch %+v, %d records", b, len(rs))
				}
			}},
		{"nulls", v2Spec{records: null},
			func(t *testing.T, b Batch, rs []Record) {
				r := rs[0]
				if r.Key != nil || r.Value != nil || r.KeySize != -1 || r.ValueSize != -1 ||
					r.Headers[0].Value != nil || r.Headers[1].Value == nil {
					t.Errorf("record %+v", r)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			batches, recs, err := collect(t, &d, buildV2(t, tt.spec))
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, batches[0], recs[0])
		})
	}
}

// TestHeaderKeyCache checks that reusing header key strings between
// records never hands out a stale key.
func TestHeaderKeyCache(t *testing.T) {
	recs := []kmsg.Record{
		{Headers: []kmsg.Header{{Key: "a"}, {Key: "b"}}},
		{Headers: []kmsg.Header{{Key: "a"}, {Key: "c"}, {Key: "d"}}},
		{Headers: []kmsg.Header{{Key: "e"}}},
		{},
		{Headers: []kmsg.Header{{Key: "e"}, {Key: "c"}}},
	}
	var d Decoder
	_, got, err := collect(t, &d, buildV2(t, v2Spec{codec: kgo.Lz4Compression(), records: recs}))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range got[0] {
		var keys, want []string
		for _, h := range r.Headers {
			keys = append(keys, h.Key)
		}
		for _, h := range recs[i].Headers {
			want = append(want, h.Key)
		}
		if !slices.Equal(keys, want) {
			t.Errorf("record %d: header keys %q, want %q", i, keys, want)
		}
	}
}

func TestLegacy(t *testing.T) {
	const ts = 1_600_000_000_000
	tests := []struct {
		name      string
		data      []byte
		batch     Batch // fields compared: Magic, Codec, BaseOffset, LastOffset, NumRecords, TimestampType, MaxTimestamp
		count     int
		offsets   []int64
		times     []int64
		values    []string
		nullKeyAt int // index of a record with a null key, or -1
	}{
		{
			name:  "v0 plain",
			data:  legacyMsg(0, 5, 0, 0, []byte("k"), []byte("hello")),
			batch: Batch{Magic: 0, Codec: CodecNone, BaseOffset: 5, LastOffset: 5, NumRecords: 1, TimestampType: NoTimestampType, MaxTimestamp: -1},
			count: 1, offsets: []int64{5}, times: []int64{-1}, values: []string{"hello"}, nullKeyAt: -1,
		},
		{
			name:  "v1 plain, null key",
			data:  legacyMsg(1, 6, 0, ts, nil, []byte("world")),
			batch: Batch{Magic: 1, Codec: CodecNone, BaseOffset: 6, LastOffset: 6, NumRecords: 1, TimestampType: CreateTime, MaxTimestamp: ts},
			count: 1, offsets: []int64{6}, times: []int64{ts}, values: []string{"world"}, nullKeyAt: 0,
		},
		{
			// Magic 1 inner offsets are relative; the wrapper holds the
			// absolute offset of the last one.
			name: "v1 gzip wrapper",
			data: legacyWrapper(t, 1, 22, 0, ts+2, kgo.GzipCompression(),
				legacyMsg(1, 0, 0, ts, []byte("a"), []byte("v0")),
				legacyMsg(1, 1, 0, ts+1, nil, []byte("v1")),
				legacyMsg(1, 2, 0, ts+2, []byte("c"), []byte("v2"))),
			batch: Batch{Magic: 1, Codec: CodecGzip, BaseOffset: -1, LastOffset: 22, NumRecords: -1, TimestampType: CreateTime, MaxTimestamp: ts + 2},
			count: 3, offsets: []int64{20, 21, 22}, times: []int64{ts, ts + 1, ts + 2}, values: []string{"v0", "v1", "v2"}, nullKeyAt: 1,
		},
		{
			name: "v1 gzip wrapper, log append time",
			data: legacyWrapper(t, 1, 8, attrTimestampType, ts+99, kgo.GzipCompression(),
				legacyMsg(1, 0, 0, ts, []byte("a"), []byte("v0")),
				legacyMsg(1, 1, 0, ts+1, []byte("b"), []byte("v1"))),
			batch: Batch{Magic: 1, Codec: CodecGzip, BaseOffset: -1, LastOffset: 8, NumRecords: -1, TimestampType: LogAppendTime, MaxTimestamp: ts + 99},
			count: 2, offsets: []int64{7, 8}, times: []int64{ts + 99, ts + 99}, values: []string{"v0", "v1"}, nullKeyAt: -1,
		},
		{
			// Magic 0 inner offsets are absolute.
			name: "v0 snappy wrapper",
			data: legacyWrapper(t, 0, 31, 0, 0, kgo.SnappyCompression(),
				legacyMsg(0, 30, 0, 0, []byte("a"), []byte("v0")),
				legacyMsg(0, 31, 0, 0, []byte("b"), []byte("v1"))),
			batch: Batch{Magic: 0, Codec: CodecSnappy, BaseOffset: -1, LastOffset: 31, NumRecords: -1, TimestampType: NoTimestampType, MaxTimestamp: -1},
			count: 2, offsets: []int64{30, 31}, times: []int64{-1, -1}, values: []string{"v0", "v1"}, nullKeyAt: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var d Decoder
			batches, recs, err := collect(t, &d, tt.data)
			if err != nil {
				t.Fatal(err)
			}
			b := batches[0]
			got := Batch{Magic: b.Magic, Codec: b.Codec, BaseOffset: b.BaseOffset, LastOffset: b.LastOffset,
				NumRecords: b.NumRecords, TimestampType: b.TimestampType, MaxTimestamp: b.MaxTimestamp}
			if fmt.Sprint(got) != fmt.Sprint(tt.batch) {
				t.Errorf("batch\n got %+v\nwant %+v", got, tt.batch)
			}
			if !b.CRCValid || b.Size != len(tt.data) || b.ProducerID != -1 || b.PartitionLeaderEpoch != -1 {
				t.Errorf("batch %+v", b)
			}
			if n, err := d.CountRecords(b); n != tt.count || err != nil {
				t.Errorf("CountRecords = %d, %v; want %d", n, err, tt.count)
			}
			if n, ids, err := d.MessageIDs(tt.data, ""); n != tt.count || ids != nil || err != nil {
				t.Errorf("MessageIDs = %d, %q, %v; want %d", n, ids, err, tt.count)
			}
			var offsets, times []int64
			var values []string
			for i, r := range recs[0] {
				offsets, times, values = append(offsets, r.Offset), append(times, r.Timestamp), append(values, string(r.Value))
				if (r.Key == nil) != (i == tt.nullKeyAt) || (r.KeySize == -1) != (i == tt.nullKeyAt) || r.Headers != nil && len(r.Headers) != 0 {
					t.Errorf("record %d: %+v", i, r)
				}
			}
			if !slices.Equal(offsets, tt.offsets) || !slices.Equal(times, tt.times) || !slices.Equal(values, tt.values) {
				t.Errorf("records: offsets %v times %v values %q; want %v %v %q", offsets, times, values, tt.offsets, tt.times, tt.values)
			}
		})
	}
}

// TestTruncation cuts a valid sequence at every byte: nothing panics, the
// batches before the cut come out intact, and a cut inside a batch is
// reported as truncation.
func TestTruncation(t *testing.T) {
	seq := mixedSequence(t)
	var d Decoder
	full, fullRecs, err := collect(t, &d, seq)
	if err != nil {
		t.Fatal(err)
	}
	ends := map[int]bool{0: true}
	for _, b := range full {
		ends[int(b.Position)+b.Size] = true
	}
	for cut := range len(seq) {
		data := seq[:cut]
		batches, recs, err := collect(t, &d, data)
		if ends[cut] {
			if err != nil {
				t.Fatalf("cut %d at a batch boundary: %v", cut, err)
			}
		} else if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut %d: error %v, want ErrTruncated", cut, err)
		}
		for i, b := range batches {
			if fmt.Sprint(b) != fmt.Sprint(full[i]) || fmt.Sprint(recs[i]) != fmt.Sprint(fullRecs[i]) {
				t.Fatalf("cut %d: batch %d differs", cut, i)
			}
		}
		if want := countBatchesBefore(full, cut); len(batches) != want {
			t.Fatalf("cut %d: %d batches, want %d", cut, len(batches), want)
		}

		n, ids, idErr := d.MessageIDs(data, DefaultIDHeader)
		if (idErr == nil) != (err == nil) || (idErr != nil && !errors.Is(idErr, ErrTruncated)) {
			t.Fatalf("cut %d: MessageIDs error %v, Batches error %v", cut, idErr, err)
		}
		wantN, wantIDs := 0, 0
		for _, rs := range recs {
			wantN += len(rs)
			for _, r := range rs {
				wantIDs += len(r.Headers) - len(r.Headers)/2 // one message-id each
			}
		}
		if n != wantN || len(ids) != wantIDs {
			t.Fatalf("cut %d: MessageIDs = %d records, %d ids; want %d, %d", cut, n, len(ids), wantN, wantIDs)
		}

		r := d.NewReader(bytes.NewReader(data), 0)
		for i := 0; ; i++ {
			b, err := r.Next()
			if err != nil {
				if i != len(batches) || (ends[cut] && err.Error() != "EOF") || (!ends[cut] && !errors.Is(err, ErrTruncated)) {
					t.Fatalf("cut %d: reader stopped after %d batches with %v", cut, i, err)
				}
				break
			}
			if fmt.Sprint(b) != fmt.Sprint(full[i]) {
				t.Fatalf("cut %d: reader batch %d differs", cut, i)
			}
		}
	}
}

func countBatchesBefore(full []Batch, cut int) int {
	n := 0
	for _, b := range full {
		if int(b.Position)+b.Size <= cut {
			n++
		}
	}
	return n
}
