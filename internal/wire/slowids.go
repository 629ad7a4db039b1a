package wire

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/event"
)

// Message ids of slow requests only. Reading a produce request's message
// ids means reading every record of it: most of what decoding a produce
// request costs. A live agent needs them only for the requests its
// slow-request log keeps, and knows which those are only when the
// response comes. With Config.MessageIDsMinLatency, a produce request's
// record batches are copied aside (a copy costs far less than reading
// the records) and read when the request turns out to be at least that
// slow, or gets no response; its record counts still come from the batch
// headers at once.

// maxHeldBuffers bounds the free list of copies kept for reuse, and
// maxPooledHold the size of one kept; maxHeldBytes bounds the bytes held
// for requests in flight over all connections. A request that would pass
// it gets no message ids (counted in Stats.IDsNotHeld).
const (
	maxHeldBuffers = 256
	maxPooledHold  = 1 << 20
	maxHeldBytes   = 64 << 20
)

// heldRecords are a produce request's record batches, copied aside: the
// batches of partition i (in event order) are bytes[ends[i-1]:ends[i]].
type heldRecords struct {
	bytes []byte
	ends  []int32
}

// holdsIDs reports whether the decoder defers message ids to the response.
func (d *Decoder) holdsIDs() bool {
	return d.cfg.MessageIDsMinLatency > 0 && d.cfg.MessageIDHeader != ""
}

// holdProduceRecords copies the record batches of a produce request's
// partitions, in the order the event lists them, for later reading. It
// returns nothing when the copy would pass maxHeldBytes.
func (d *Decoder) holdProduceRecords(req *kmsg.ProduceRequest) heldRecords {
	parts, size := 0, 0
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			parts++
			size += len(req.Topics[i].Partitions[j].Records)
		}
	}
	if d.heldBytes+size > maxHeldBytes {
		d.stats.IDsNotHeld++
		return heldRecords{}
	}
	var buf []byte
	if n := len(d.heldFree); n > 0 && cap(d.heldFree[n-1]) >= size {
		buf, d.heldFree = d.heldFree[n-1][:0], d.heldFree[:n-1]
	} else {
		buf = make([]byte, 0, max(size, 4096))
	}
	h := heldRecords{bytes: buf, ends: d.int32s.take(parts)}
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			h.bytes = append(h.bytes, req.Topics[i].Partitions[j].Records...)
			h.ends = append(h.ends, int32(len(h.bytes)))
		}
	}
	d.heldBytes += cap(h.bytes)
	return h
}

// releaseHeld reads the held batches' message ids into ev when it is slow
// enough (or unanswered: it may be the slowest of all), and gives the
// copy back.
func (d *Decoder) releaseHeld(h *heldRecords, ev *event.Request, answered bool) {
	if h.bytes == nil {
		return
	}
	if d.batches != nil && (!answered || ev.End.Sub(ev.Arrival) >= d.cfg.MessageIDsMinLatency) {
		start := int32(0)
		for i, end := range h.ends {
			if i < len(ev.Partitions) {
				// The record count and any batch error came from the
				// headers already; only the ids are new.
				_, ids, _ := d.batches.MessageIDs(h.bytes[start:end], d.cfg.MessageIDHeader)
				ev.Partitions[i].MessageIDs = ids[:min(len(ids), d.cfg.MaxMessageIDs)]
			}
			start = end
		}
	}
	d.heldBytes -= cap(h.bytes)
	if cap(h.bytes) <= maxPooledHold && len(d.heldFree) < maxHeldBuffers {
		d.heldFree = append(d.heldFree, h.bytes[:0])
	}
	*h = heldRecords{}
}
