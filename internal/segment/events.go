package segment

import (
	"strconv"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
)

// BatchEvent converts a batch header to its printed form. count is the
// record count to print (records.Decoder.CountRecords, for legacy
// wrappers whose header has none).
func BatchEvent(b records.Batch, count int) event.SegmentBatch {
	return event.SegmentBatch{
		Position:             b.Position,
		Size:                 b.Size,
		BaseOffset:           b.BaseOffset,
		LastOffset:           b.LastOffset,
		Count:                count,
		Magic:                b.Magic,
		Compression:          b.Codec.String(),
		CRCValid:             b.CRCValid,
		ProducerID:           b.ProducerID,
		ProducerEpoch:        b.ProducerEpoch,
		BaseSequence:         b.BaseSequence,
		PartitionLeaderEpoch: b.PartitionLeaderEpoch,
		Transactional:        b.Transactional,
		Control:              b.Control,
		FirstTimestamp:       b.FirstTimestamp,
		MaxTimestamp:         b.MaxTimestamp,
	}
}

// RecordEvent converts a record of a batch to its printed form, copying
// what it keeps (records are reused by the Decoder). control says whether
// the batch is a control batch, whose records are transaction markers;
// payload whether to include keys and values.
func RecordEvent(r *records.Record, control, payload bool) event.SegmentRecord {
	e := event.SegmentRecord{
		Offset:    r.Offset,
		Timestamp: r.Timestamp,
		KeySize:   r.KeySize,
		ValueSize: r.ValueSize,
	}
	if len(r.Headers) > 0 {
		e.Headers = make(event.Headers, 0, len(r.Headers))
	}
	for _, h := range r.Headers {
		var v *string
		if h.Value != nil {
			s := event.BytesText(h.Value)
			v = &s
		}
		e.Headers = append(e.Headers, event.Header{Key: h.Key, Value: v})
	}
	if control {
		if typ, epoch, ok := ParseControl(r.Key, r.Value); ok {
			e.ControlType = typ
			if (typ == "commit" || typ == "abort") && len(r.Value) >= 6 {
				e.CoordinatorEpoch = &epoch
			}
		}
	}
	if payload {
		if r.Key != nil {
			s := event.BytesText(r.Key)
			e.Key = &s
		}
		if r.Value != nil {
			s := event.BytesText(r.Value)
			e.Value = &s
		}
	}
	return e
}

// ParseControl decodes a control record (Kafka's ControlRecordType and
// EndTransactionMarker): the key is a version and a type, 2 bytes each
// (0 abort, 1 commit); for a transaction marker the value is a version
// and a 4-byte coordinator epoch. ok is false for a key that is not a
// control key. epoch is -1 when the value does not hold one.
func ParseControl(key, value []byte) (typ string, epoch int32, ok bool) {
	if len(key) < 4 {
		return "", -1, false
	}
	t := int16(be.Uint16(key[2:]))
	switch t {
	case 0:
		typ = "abort"
	case 1:
		typ = "commit"
	default:
		typ = "unknown(" + strconv.Itoa(int(t)) + ")"
	}
	epoch = -1
	if (t == 0 || t == 1) && len(value) >= 6 {
		epoch = int32(be.Uint32(value[2:]))
	}
	return typ, epoch, true
}
