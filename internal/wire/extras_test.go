package wire

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// withoutExtras returns r as JSON with the fields of x cleared: what a
// decoder skipping x must emit for the request r was decoded as.
func withoutExtras(t *testing.T, r *event.Request, x Extras) string {
	t.Helper()
	c := *r
	c.Partitions = append([]event.Partition(nil), r.Partitions...)
	if x.Has(ProducerHeaders) {
		c.Producer = event.Producer{TransactionalID: r.Producer.TransactionalID}
		for i := range c.Partitions {
			c.Partitions[i].Batches = 0
		}
	}
	if x.Has(FetchExtent) {
		for i := range c.Partitions {
			p := &c.Partitions[i]
			p.FirstOffset, p.LastOffset, p.FirstTimestamp, p.MaxTimestamp = nil, nil, nil, nil
		}
	}
	b, err := json.Marshal(&c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestSkipExtras: a decoder told to skip extra fields (Config.Skip) emits
// the same requests as one that decodes them, minus exactly those fields,
// with the same counters, on whole, malformed and truncated batches.
func TestSkipExtras(t *testing.T) {
	const t0 = int64(1_764_000_000_000)
	b1 := batchAt(100, t0, t0+5, "a", "b", "c")
	b2 := batchAt(103, t0+10, t0+40, "d", "e")
	hostile := append([]byte(nil), b2...) // a length no batch can have
	binary.BigEndian.PutUint32(hostile[8:], 0x7ffffff0)
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	id := [16]byte{4, 2}
	produce := func(batches []byte) []testSegment {
		c := newConversation(40300)
		c.handshake()
		req := produceRequest("orders", 2, 1)
		req.Topics[0].Partitions[0].Records = batches
		c.send(true, requestFrame(req, 9, 1, "p"), 1400, time.Millisecond)
		c.send(false, responseFrame(produceResponse("orders", 2), 9, 1), 1400, time.Millisecond)
		return c.segs
	}
	fetch := func(batches []byte) []testSegment {
		c := newConversation(40301)
		c.handshake()
		c.send(true, requestFrame(fetchRequest("orders", id, 2, 100, -1), 13, 1, "c"), 1400, time.Millisecond)
		c.send(false, responseFrame(fetchResponse("orders", id, fetchedPartition{2, 0, 500, 7, batches}), 13, 1), 1400, time.Millisecond)
		return c.segs
	}
	tests := []struct {
		name string
		segs []testSegment
		has  Extras // the extras the full decode fills
	}{
		{"produce, two batches", produce(cat(b1, b2)), ProducerHeaders},
		{"produce, hostile first batch", produce(hostile), 0},
		{"produce, hostile second batch", produce(cat(b1, hostile)), ProducerHeaders},
		{"produce, truncated only batch", produce(b1[:len(b1)-3]), 0},
		{"produce, header cut", produce(b1[:30]), 0},
		{"fetch, two batches", fetch(cat(b1, b2)), FetchExtent},
		{"fetch, partial trailing batch", fetch(cat(b1, b2[:len(b2)-3])), FetchExtent},
		{"fetch, hostile first batch", fetch(hostile), 0},
		{"fetch, no batches", fetch(nil), 0},
	}
	for _, tt := range tests {
		for _, skip := range []Extras{ProducerHeaders, FetchExtent, AllExtras} {
			t.Run(tt.name+"/skip "+skip.String(), func(t *testing.T) {
				full, fd := decodeConfig(tt.segs, DefaultConfig())
				cfg := DefaultConfig()
				cfg.Skip = skip
				skipped, sd := decodeConfig(tt.segs, cfg)
				compareSkipped(t, full, skipped, skip, tt.has)
				if fs, ss := fd.Stats(), sd.Stats(); fs != ss {
					t.Errorf("stats differ: %+v decoding everything, %+v skipping %v", fs, ss, skip)
				}
			})
		}
	}
}

// compareSkipped checks that skipped are full without the fields of skip,
// and that full had those of has among them (else the comparison proves
// nothing).
func compareSkipped(t *testing.T, full, skipped []*event.Request, skip, has Extras) {
	t.Helper()
	if len(full) != len(skipped) {
		t.Fatalf("%d requests decoding everything, %d skipping %v", len(full), len(skipped), skip)
	}
	changed := false
	for i := range full {
		want := withoutExtras(t, full[i], skip)
		got, err := json.Marshal(skipped[i])
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want {
			t.Errorf("request %d skipping %v:\n got %s\nwant %s", i, skip, got, want)
		}
		if whole := withoutExtras(t, full[i], 0); whole != want {
			changed = true
		}
	}
	if wantChange := has&skip != 0; changed != wantChange {
		t.Errorf("skipping %v changed the requests: %v, want %v", skip, changed, wantChange)
	}
}
