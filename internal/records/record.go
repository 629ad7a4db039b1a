package records

import "fmt"

// Record is one decoded record. Key and Value alias the input or the
// Decoder's decompression buffer; this package exposes them but never prints
// them, since they are user data.
type Record struct {
	Offset    int64
	Timestamp int64
	// KeySize and ValueSize are the lengths in bytes, -1 for null.
	KeySize   int
	ValueSize int
	// Key and Value are nil when null.
	Key     []byte
	Value   []byte
	Headers []Header // magic 2 only
}

// Header is one record header. Value is nil when null.
type Header struct {
	Key   string
	Value []byte
}

// rawHeader is a header as it sits in the input: decoding one costs no
// allocation. value is nil when null.
type rawHeader struct {
	key, value []byte
}

// rawRecord is a magic 2 record as it sits in the input, before offsets and
// timestamps are made absolute. Its headers slice is reused from record to
// record, so decoding allocates only when a record has more headers than any
// before it.
type rawRecord struct {
	timestampDelta int64
	offsetDelta    int32
	key, value     []byte
	headers        []rawHeader
}

// parseRecordV2 decodes the magic 2 record at the start of p into r and
// returns the bytes it used. The checks follow Kafka's DefaultRecord: the
// record must use exactly the length it declares.
func parseRecordV2(p []byte, r *rawRecord) (int, error) {
	c := cursor{b: p}
	length := c.varint("record length")
	if c.err != nil {
		return 0, c.err
	}
	if length < minRecordV2-1 {
		return 0, fmt.Errorf("record length %d is below the minimum %d", length, minRecordV2-1)
	}
	if int64(length) > int64(len(c.b)) {
		return 0, fmt.Errorf("record length %d exceeds remaining %d bytes", length, len(c.b))
	}
	used := len(p) - len(c.b) + int(length)
	c.b = c.b[:length]

	c.int8("attributes") // unused by Kafka for magic 2
	r.timestampDelta = c.varlong("timestamp delta")
	r.offsetDelta = c.varint("offset delta")
	r.key = c.varintBytes("key")
	r.value = c.varintBytes("value")
	n := c.varint("header count")
	if c.err != nil {
		return 0, c.err
	}
	// A header takes at least two bytes (two empty lengths); checking the
	// count against that keeps a hostile count from looping long.
	if n < 0 || int64(n) > int64(len(c.b)/2) {
		return 0, fmt.Errorf("header count %d is invalid for %d remaining bytes", n, len(c.b))
	}
	r.headers = r.headers[:0]
	for range n {
		klen := c.varint("header key length")
		if klen < 0 && c.err == nil {
			return 0, fmt.Errorf("header key length %d is negative", klen)
		}
		k := c.bytesN(int64(klen), "header key")
		v := c.varintBytes("header value")
		if c.err != nil {
			return 0, c.err
		}
		r.headers = append(r.headers, rawHeader{key: k, value: v})
	}
	if len(c.b) != 0 {
		return 0, fmt.Errorf("record has %d bytes beyond its headers", len(c.b))
	}
	return used, nil
}

// legacyMessage is a decoded magic 0 or 1 message.
type legacyMessage struct {
	offset     int64
	magic      int8
	attributes int8
	timestamp  int64 // -1 for magic 0
	key, value []byte
}

func (m *legacyMessage) codec() Codec { return Codec(m.attributes & attrCodecMask) }

// parseLegacyMessage decodes the magic 0 or 1 message at the start of p and
// returns the bytes it used.
func parseLegacyMessage(p []byte) (legacyMessage, int, error) {
	var m legacyMessage
	if len(p) < magicEnd {
		return m, 0, fmt.Errorf("message: %d bytes remain, fewer than a message header", len(p))
	}
	size := int32(be.Uint32(p[8:]))
	minSize := int32(minLengthV0)
	m.magic = int8(p[16])
	switch m.magic {
	case 0:
	case 1:
		minSize = minLengthV1
	default:
		return m, 0, fmt.Errorf("message: magic %d in a magic 0/1 message set", m.magic)
	}
	if size < minSize {
		return m, 0, fmt.Errorf("message: length %d is below the minimum %d", size, minSize)
	}
	if int64(size) > int64(len(p)-prefixLen) {
		return m, 0, fmt.Errorf("message: length %d exceeds remaining %d bytes", size, len(p)-prefixLen)
	}
	used := prefixLen + int(size)
	m.offset = int64(be.Uint64(p))
	c := cursor{b: p[magicEnd:used]}
	m.attributes = c.int8("attributes")
	m.timestamp = -1
	if m.magic == 1 {
		m.timestamp = c.int64("timestamp")
	}
	m.key = c.int32Bytes("key")
	m.value = c.int32Bytes("value")
	if c.err != nil {
		return m, 0, fmt.Errorf("message: %w", c.err)
	}
	if len(c.b) != 0 {
		return m, 0, fmt.Errorf("message has %d bytes beyond its value", len(c.b))
	}
	return m, used, nil
}
