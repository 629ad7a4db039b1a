package records

import "fmt"

// eachLegacy calls fn with each record of the magic 0 or 1 batch h until fn
// returns false: the message itself, or the inner messages of a compressed
// wrapper with their offsets and timestamps made absolute.
func (d *Decoder) eachLegacy(h *Batch, fn func(*legacyMessage) bool) error {
	if h.Codec == CodecNone {
		m, _, err := parseLegacyMessage(h.Data)
		if err != nil {
			return &Error{Pos: h.Position, Err: err}
		}
		fn(&m)
		return nil
	}
	wrapper, inner, err := d.legacyInner(h)
	if err != nil {
		return err
	}
	// Magic 1 inner offsets are relative: the wrapper carries the
	// absolute offset of the last inner message (Kafka's
	// AbstractLegacyRecordBatch). Magic 0 inner offsets are absolute.
	_, lastInner, err := scanInner(inner, h.Magic)
	if err != nil {
		return &Error{Pos: h.Position, Err: err}
	}
	base := int64(0)
	if h.Magic == 1 {
		base = wrapper.offset - lastInner
	}
	for len(inner) > 0 {
		m, n, _ := parseLegacyMessage(inner) // scanInner validated every message
		inner = inner[n:]
		m.offset += base
		if h.TimestampType == LogAppendTime {
			m.timestamp = wrapper.timestamp
		}
		if !fn(&m) {
			return nil
		}
	}
	return nil
}

// legacyInner decodes the compressed wrapper h and decompresses its value,
// the inner message set.
func (d *Decoder) legacyInner(h *Batch) (legacyMessage, []byte, error) {
	wrapper, _, err := parseLegacyMessage(h.Data)
	if err != nil {
		return wrapper, nil, &Error{Pos: h.Position, Err: err}
	}
	if wrapper.value == nil {
		return wrapper, nil, errorf(h.Position, "compressed wrapper message has a null value")
	}
	inner, err := d.unz.decompress(h.Codec, wrapper.value, d.maxDecompressedSize())
	if err != nil {
		return wrapper, nil, &Error{Pos: h.Position, Err: err}
	}
	return wrapper, inner, nil
}

// scanInner validates a decompressed inner message set and returns its
// message count and the offset of its last message. Kafka rejects inner
// messages whose magic differs from the wrapper's, and nested compression.
func scanInner(inner []byte, magic int8) (count int, lastOffset int64, err error) {
	for len(inner) > 0 {
		m, n, err := parseLegacyMessage(inner)
		if err != nil {
			return 0, 0, fmt.Errorf("inner message %d: %w", count, err)
		}
		if m.magic != magic {
			return 0, 0, fmt.Errorf("inner message %d: magic %d inside a magic %d wrapper", count, m.magic, magic)
		}
		if m.codec() != CodecNone {
			return 0, 0, fmt.Errorf("inner message %d: nested compression (%s)", count, m.codec())
		}
		inner = inner[n:]
		count++
		lastOffset = m.offset
	}
	if count == 0 {
		return 0, 0, fmt.Errorf("compressed wrapper holds no messages")
	}
	return count, lastOffset, nil
}
