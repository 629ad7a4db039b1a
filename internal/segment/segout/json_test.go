package segout

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestBatchJSONMatchesEncodingJSON holds the hand-written encoder to
// encoding/json's output for the same values.
func TestBatchJSONMatchesEncodingJSON(t *testing.T) {
	s := func(v string) *string { return &v }
	epoch := int32(7)
	odd := []string{"plain", "", "quote\" back\\slash", "<&>", "\x1b[31m\n\t", "\xff\xfe", "été", "\u2028", "\x7f"}
	var hs event.Headers
	for _, v := range odd {
		hs = append(hs, event.Header{Key: v, Value: s(v)})
	}
	hs = append(hs, event.Header{Key: "null", Value: nil})
	batches := []event.SegmentBatch{
		{},
		{Position: 1 << 40, Size: 61, BaseOffset: -1, LastOffset: 9, Count: -1, Magic: 1, Compression: "unknown(7)",
			CRCValid: true, ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: -1,
			Transactional: true, Control: true, FirstTimestamp: -1, MaxTimestamp: 1795295512831},
		{Records: []event.SegmentRecord{}, MessageIDs: []string{}},
		{Records: []event.SegmentRecord{
			{Offset: 5, Timestamp: -1, KeySize: -1, ValueSize: 0},
			{Offset: 6, Headers: hs, ControlType: "commit", CoordinatorEpoch: &epoch, Key: s("k<"), Value: s("\x00")},
		}, MessageIDs: odd},
	}
	for i := range batches {
		want, err := json.Marshal(&batches[i])
		if err != nil {
			t.Fatal(err)
		}
		if got := appendBatchJSON(nil, &batches[i]); string(got) != string(want) {
			t.Errorf("batch %d:\ngot  %s\nwant %s", i, got, want)
		}
	}
}

// TestAppendBatchRow: the table's row builder writes exactly the cells the
// CSV writer gets, tab-separated.
func TestAppendBatchRow(t *testing.T) {
	for _, b := range []event.SegmentBatch{
		{},
		{Position: 1 << 40, Size: 61, BaseOffset: -1, LastOffset: 9, Count: 10, Magic: 2, Compression: "zstd", CRCValid: true,
			ProducerID: -1, ProducerEpoch: -1, BaseSequence: -1, PartitionLeaderEpoch: 7, Transactional: true, Control: true,
			FirstTimestamp: 1763784000000, MaxTimestamp: 1763784000999},
	} {
		if got, want := string(appendBatchRow(nil, &b)), strings.Join(batchCells(&b), "\t"); got != want {
			t.Errorf("row %q, want %q", got, want)
		}
	}
}
