package segout

import (
	"strconv"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
)

// appendBatchJSON appends the JSON encoding of b, byte for byte what
// encoding/json produces for event.SegmentBatch (a test holds it to that),
// without reflection: a --records dump encodes millions of records.
func appendBatchJSON(out []byte, b *event.SegmentBatch) []byte {
	out = append(out, `{"position":`...)
	out = strconv.AppendInt(out, b.Position, 10)
	out = append(out, `,"size":`...)
	out = strconv.AppendInt(out, int64(b.Size), 10)
	out = append(out, `,"base_offset":`...)
	out = strconv.AppendInt(out, b.BaseOffset, 10)
	out = append(out, `,"last_offset":`...)
	out = strconv.AppendInt(out, b.LastOffset, 10)
	out = append(out, `,"count":`...)
	out = strconv.AppendInt(out, int64(b.Count), 10)
	out = append(out, `,"magic":`...)
	out = strconv.AppendInt(out, int64(b.Magic), 10)
	out = append(out, `,"compression":`...)
	out = output.AppendJSONString(out, b.Compression)
	out = append(out, `,"crc_valid":`...)
	out = strconv.AppendBool(out, b.CRCValid)
	out = append(out, `,"producer_id":`...)
	out = strconv.AppendInt(out, b.ProducerID, 10)
	out = append(out, `,"producer_epoch":`...)
	out = strconv.AppendInt(out, int64(b.ProducerEpoch), 10)
	out = append(out, `,"base_sequence":`...)
	out = strconv.AppendInt(out, int64(b.BaseSequence), 10)
	out = append(out, `,"partition_leader_epoch":`...)
	out = strconv.AppendInt(out, int64(b.PartitionLeaderEpoch), 10)
	out = append(out, `,"transactional":`...)
	out = strconv.AppendBool(out, b.Transactional)
	out = append(out, `,"control":`...)
	out = strconv.AppendBool(out, b.Control)
	out = append(out, `,"first_timestamp":`...)
	out = strconv.AppendInt(out, b.FirstTimestamp, 10)
	out = append(out, `,"max_timestamp":`...)
	out = strconv.AppendInt(out, b.MaxTimestamp, 10)
	if b.Records != nil {
		out = append(out, `,"records":[`...)
		for i := range b.Records {
			if i > 0 {
				out = append(out, ',')
			}
			out = appendRecordJSON(out, &b.Records[i])
		}
		out = append(out, ']')
	}
	if b.MessageIDs != nil {
		out = append(out, `,"message_ids":[`...)
		for i, id := range b.MessageIDs {
			if i > 0 {
				out = append(out, ',')
			}
			out = output.AppendJSONString(out, id)
		}
		out = append(out, ']')
	}
	return append(out, '}')
}

func appendRecordJSON(out []byte, r *event.SegmentRecord) []byte {
	out = append(out, `{"offset":`...)
	out = strconv.AppendInt(out, r.Offset, 10)
	out = append(out, `,"timestamp":`...)
	out = strconv.AppendInt(out, r.Timestamp, 10)
	out = append(out, `,"key_size":`...)
	out = strconv.AppendInt(out, int64(r.KeySize), 10)
	out = append(out, `,"value_size":`...)
	out = strconv.AppendInt(out, int64(r.ValueSize), 10)
	out = append(out, `,"headers":{`...)
	for i, h := range r.Headers {
		if i > 0 {
			out = append(out, ',')
		}
		out = output.AppendJSONString(out, h.Key)
		out = append(out, ':')
		if h.Value == nil {
			out = append(out, "null"...)
		} else {
			out = output.AppendJSONString(out, *h.Value)
		}
	}
	out = append(out, '}')
	if r.ControlType != "" {
		out = append(out, `,"control_type":`...)
		out = output.AppendJSONString(out, r.ControlType)
	}
	if r.CoordinatorEpoch != nil {
		out = append(out, `,"coordinator_epoch":`...)
		out = strconv.AppendInt(out, int64(*r.CoordinatorEpoch), 10)
	}
	if r.Key != nil {
		out = append(out, `,"key":`...)
		out = output.AppendJSONString(out, *r.Key)
	}
	if r.Value != nil {
		out = append(out, `,"value":`...)
		out = output.AppendJSONString(out, *r.Value)
	}
	return append(out, '}')
}
