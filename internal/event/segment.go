package event

import (
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"
)

// SegmentBatch is one record batch of a log segment (.log) file, as
// `kscope segment dump` and `kscope segment lookup` print it. For a
// legacy (magic 0 or 1) message the producer fields and leader epoch are
// -1, and for magic 0 the timestamps too.
type SegmentBatch struct {
	Position             int64  `json:"position"` // byte position in the file
	Size                 int    `json:"size"`     // bytes, the 12-byte offset and length prefix included
	BaseOffset           int64  `json:"base_offset"`
	LastOffset           int64  `json:"last_offset"`
	Count                int    `json:"count"` // records
	Magic                int8   `json:"magic"`
	Compression          string `json:"compression"` // none, gzip, snappy, lz4, zstd
	CRCValid             bool   `json:"crc_valid"`
	ProducerID           int64  `json:"producer_id"`
	ProducerEpoch        int16  `json:"producer_epoch"`
	BaseSequence         int32  `json:"base_sequence"`
	PartitionLeaderEpoch int32  `json:"partition_leader_epoch"`
	Transactional        bool   `json:"transactional"`
	Control              bool   `json:"control"`
	// FirstTimestamp is the batch's base timestamp (ms since the epoch);
	// in a batch the log cleaner marked with a delete horizon it holds
	// that horizon.
	FirstTimestamp int64 `json:"first_timestamp"`
	MaxTimestamp   int64 `json:"max_timestamp"`

	// Records is set with --records (empty, not absent, for a batch
	// without records).
	Records []SegmentRecord `json:"records,omitzero"`
	// MessageIDs is set by lookup: the values of the message id header
	// of the batch's records, in order.
	MessageIDs []string `json:"message_ids,omitzero"`
}

// SegmentRecord is one record of a SegmentBatch.
type SegmentRecord struct {
	Offset    int64 `json:"offset"`
	Timestamp int64 `json:"timestamp"`
	KeySize   int   `json:"key_size"`   // -1 for a null key
	ValueSize int   `json:"value_size"` // -1 for a null value
	// Headers is a JSON object from header key to value (see
	// BytesText); a null value is null. Order and repeated keys are
	// kept as in the record.
	Headers Headers `json:"headers"`
	// ControlType is "commit" or "abort" for a transaction marker (a
	// record of a control batch), "unknown(N)" for another control type.
	ControlType      string `json:"control_type,omitempty"`
	CoordinatorEpoch *int32 `json:"coordinator_epoch,omitempty"`
	// Key and Value are set only with --payload (see BytesText); absent
	// for null.
	Key   *string `json:"key,omitempty"`
	Value *string `json:"value,omitempty"`
}

// Header is one record header; Value is nil for a null value.
type Header struct {
	Key   string
	Value *string
}

// Headers are a record's headers, encoded as a JSON object in record order.
type Headers []Header

// MarshalJSON writes the headers as an object. encoding/json escapes
// control characters in keys and values.
func (h Headers) MarshalJSON() ([]byte, error) {
	out := []byte{'{'}
	for i, hd := range h {
		if i > 0 {
			out = append(out, ',')
		}
		k, err := json.Marshal(hd.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(hd.Value)
		if err != nil {
			return nil, err
		}
		out = append(append(append(out, k...), ':'), v...)
	}
	return append(out, '}'), nil
}

// BytesText renders bytes from a record: as text when they are valid
// UTF-8, else as lowercase hex. Printing text to a terminal still needs
// escaping (output.Escape).
func BytesText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return hex.EncodeToString(b)
}

// IndexEntry is one entry of an .index or .timeindex file, as `kscope
// segment dump` prints it.
type IndexEntry struct {
	Pos    int64 `json:"index_position"` // byte position in the index file
	Offset int64 `json:"offset"`
	// Position is the .log position, for an offset index.
	Position *int64 `json:"position,omitempty"`
	// Timestamp is set for a time index.
	Timestamp *int64 `json:"timestamp,omitempty"`
}
