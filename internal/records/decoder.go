package records

import (
	"iter"
)

// Default limits, used when the Decoder's fields are zero.
const (
	// DefaultMaxBatchSize bounds a batch's length field. A larger claim
	// is reported as corruption rather than as a truncated batch. Kafka
	// brokers default message.max.bytes to 1 MiB.
	DefaultMaxBatchSize = 64 << 20
	// DefaultMaxDecompressedSize bounds what one compressed batch may
	// decompress to.
	DefaultMaxDecompressedSize = 64 << 20
)

// Decoder decodes record batches. The zero value is ready to use with the
// default limits. A Decoder keeps buffers between calls so that decoding
// allocates little; it is not safe for concurrent use, and records it
// returns from a compressed batch are valid only until its next call.
type Decoder struct {
	// MaxBatchSize bounds a batch's length field; 0 means
	// DefaultMaxBatchSize.
	MaxBatchSize int
	// MaxDecompressedSize bounds a compressed batch's decompressed size;
	// 0 means DefaultMaxDecompressedSize.
	MaxDecompressedSize int

	unz  unzipper
	raw  rawRecord
	rec  Record
	keys []string // header keys of the last record, reused when equal
	ids  idScratch
}

func (d *Decoder) maxBatchSize() int {
	if d.MaxBatchSize > 0 {
		return d.MaxBatchSize
	}
	return DefaultMaxBatchSize
}

func (d *Decoder) maxDecompressedSize() int {
	if d.MaxDecompressedSize > 0 {
		return d.MaxDecompressedSize
	}
	return DefaultMaxDecompressedSize
}

// Batches iterates over the batches in data, decoding headers only; it
// never decompresses. Each batch's CRC is checked and reported in
// Batch.CRCValid, not as an error. On a malformed or truncated batch it
// yields one error, an *Error wrapping ErrTruncated when data ends inside
// the batch, and stops.
func (d *Decoder) Batches(data []byte) iter.Seq2[Batch, error] {
	maxSize := d.maxBatchSize()
	return func(yield func(Batch, error) bool) {
		for pos := 0; pos < len(data); {
			b, err := parseBatch(data[pos:], int64(pos), maxSize, true)
			if err != nil {
				yield(Batch{}, err)
				return
			}
			if !yield(b, nil) {
				return
			}
			pos += b.Size
		}
	}
}

// Records iterates over the records of b, decompressing them if needed.
// The yielded *Record, and its Headers, are reused from one record to the
// next; copy what must outlive an iteration. On a malformed record it
// yields one error and stops.
func (d *Decoder) Records(b Batch) iter.Seq2[*Record, error] {
	return func(yield func(*Record, error) bool) {
		err := d.eachRecord(b, func(r *Record) bool { return yield(r, nil) })
		if err != nil {
			yield(nil, err)
		}
	}
}

// CountRecords returns b's record count. It is b.NumRecords, except for a
// magic 0 or 1 compressed wrapper, whose inner messages it decompresses and
// counts.
func (d *Decoder) CountRecords(b Batch) (int, error) {
	if b.NumRecords >= 0 {
		return b.NumRecords, nil
	}
	h, err := d.reparse(b)
	if err != nil {
		return 0, err
	}
	if h.NumRecords >= 0 {
		return h.NumRecords, nil
	}
	_, inner, err := d.legacyInner(&h)
	if err != nil {
		return 0, err
	}
	n, _, err := scanInner(inner, h.Magic)
	if err != nil {
		return 0, &Error{Pos: h.Position, Err: err}
	}
	return n, nil
}

// reparse decodes b's header again from b.Data, so that a Batch built or
// modified by the caller cannot make the record decoders index out of
// range.
func (d *Decoder) reparse(b Batch) (Batch, error) {
	h, err := parseBatch(b.Data, b.Position, d.maxBatchSize(), false)
	if err != nil {
		return Batch{}, err
	}
	if h.Size != len(b.Data) {
		return Batch{}, errorf(b.Position, "batch data is %d bytes but its length field says %d", len(b.Data), h.Size)
	}
	return h, nil
}

// eachRecord calls fn for each record of b until fn returns false.
func (d *Decoder) eachRecord(b Batch, fn func(*Record) bool) error {
	h, err := d.reparse(b)
	if err != nil {
		return err
	}
	if h.Magic == 2 {
		return d.eachRecordV2(&h, func(raw *rawRecord) bool {
			return fn(d.fromRaw(&h, raw))
		})
	}
	return d.eachLegacy(&h, func(m *legacyMessage) bool {
		return fn(d.fromLegacy(m))
	})
}

// fromRaw fills the Decoder's Record from a magic 2 record of h.
func (d *Decoder) fromRaw(h *Batch, raw *rawRecord) *Record {
	r := &d.rec
	r.Offset = h.BaseOffset + int64(raw.offsetDelta)
	// Like Kafka, log append time batches give every record the
	// batch's max timestamp, whatever the record's delta says.
	if h.TimestampType == LogAppendTime {
		r.Timestamp = h.MaxTimestamp
	} else {
		r.Timestamp = h.FirstTimestamp + raw.timestampDelta
	}
	r.Key, r.KeySize = raw.key, sizeOf(raw.key)
	r.Value, r.ValueSize = raw.value, sizeOf(raw.value)
	r.Headers = r.Headers[:0]
	for i, rh := range raw.headers {
		// Header keys repeat from record to record; converting the
		// bytes only when they differ from the last record's key at
		// the same index avoids an allocation per header.
		if i == len(d.keys) {
			d.keys = append(d.keys, string(rh.key))
		} else if d.keys[i] != string(rh.key) {
			d.keys[i] = string(rh.key)
		}
		r.Headers = append(r.Headers, Header{Key: d.keys[i], Value: rh.value})
	}
	return r
}

// fromLegacy fills the Decoder's Record from a magic 0 or 1 message whose
// offset and timestamp eachLegacy already made absolute.
func (d *Decoder) fromLegacy(m *legacyMessage) *Record {
	r := &d.rec
	r.Offset, r.Timestamp = m.offset, m.timestamp
	r.Key, r.KeySize = m.key, sizeOf(m.key)
	r.Value, r.ValueSize = m.value, sizeOf(m.value)
	r.Headers = r.Headers[:0]
	return r
}

func sizeOf(b []byte) int {
	if b == nil {
		return -1
	}
	return len(b)
}
