package records

// Stats describes a sequence of record batches by size: what the capacity
// model (kscope model --from-capture) measures from real traffic. Sizes
// are sums over the batches, so that several calls can be added up.
type Stats struct {
	// Batches counts the top-level entries: magic 2 batches, magic 0/1
	// compressed wrappers and uncompressed magic 0/1 messages.
	Batches int
	// Records counts the records (inner messages of wrappers included).
	Records int
	// Magic is the largest magic seen.
	Magic int8
	// Compressed counts the batches (or wrappers) with a codec.
	Compressed int
	// Bytes is the batches' total size, headers included.
	Bytes int
	// RecordsBytes is the records part as stored: a magic 2 batch's
	// bytes after its 61-byte header, a wrapper's value, an uncompressed
	// magic 0/1 message whole. UncompressedBytes is the same part
	// decompressed (equal for uncompressed batches).
	RecordsBytes      int
	UncompressedBytes int
	// KeyBytes and ValueBytes sum the keys' and values' lengths (null
	// counts as 0); NullKeys counts the records without a key.
	KeyBytes   int64
	ValueBytes int64
	NullKeys   int
	// Headers counts record headers; HeaderBytes sums their keys' and
	// values' lengths.
	Headers     int
	HeaderBytes int64
	// TimestampSpanMs sums, over magic 2 batches, the max timestamp minus
	// the first: how long the producer took to fill the batch, which sets
	// the size of the records' timestamp deltas.
	TimestampSpanMs int64
}

// Stats measures the batches in data, decompressing the compressed ones.
// Like [Decoder.MessageIDs] it does not check CRCs. On error, the Stats
// cover the batches before the failing one.
func (d *Decoder) Stats(data []byte) (Stats, error) {
	var s Stats
	maxSize := d.maxBatchSize()
	for pos := 0; pos < len(data); {
		b, err := parseBatch(data[pos:], int64(pos), maxSize, false)
		if err != nil {
			return s, err
		}
		var t Stats
		if b.Magic == 2 {
			err = d.statsV2(&b, &t)
		} else {
			err = d.statsLegacy(&b, &t)
		}
		if err != nil {
			return s, err
		}
		s.add(&t)
		pos += b.Size
	}
	return s, nil
}

func (s *Stats) add(t *Stats) {
	s.Batches += t.Batches
	s.Records += t.Records
	s.Magic = max(s.Magic, t.Magic)
	s.Compressed += t.Compressed
	s.Bytes += t.Bytes
	s.RecordsBytes += t.RecordsBytes
	s.UncompressedBytes += t.UncompressedBytes
	s.KeyBytes += t.KeyBytes
	s.ValueBytes += t.ValueBytes
	s.NullKeys += t.NullKeys
	s.Headers += t.Headers
	s.HeaderBytes += t.HeaderBytes
	s.TimestampSpanMs += t.TimestampSpanMs
}

// statsV2 measures the magic 2 batch h: the same walk as eachRecordV2,
// keeping the decompressed size.
func (d *Decoder) statsV2(h *Batch, s *Stats) error {
	data := h.Data[v2HeaderLen:]
	*s = Stats{Batches: 1, Magic: 2, Bytes: h.Size, RecordsBytes: len(data)}
	if h.Codec != CodecNone {
		var err error
		if data, err = d.unz.decompress(h.Codec, data, d.maxDecompressedSize()); err != nil {
			return &Error{Pos: h.Position, Err: err}
		}
		s.Compressed = 1
	}
	s.UncompressedBytes = len(data)
	if span := h.MaxTimestamp - h.FirstTimestamp; span > 0 {
		s.TimestampSpanMs = span
	}
	for i := range h.NumRecords {
		n, err := parseRecordV2(data, &d.raw)
		if err != nil {
			return errorf(h.Position, "record %d of %d: %w", i, h.NumRecords, err)
		}
		data = data[n:]
		s.Records++
		s.count(d.raw.key, d.raw.value)
		for _, rh := range d.raw.headers {
			s.Headers++
			s.HeaderBytes += int64(len(rh.key) + len(rh.value))
		}
	}
	if len(data) != 0 {
		return errorf(h.Position, "%d bytes follow the batch's %d records", len(data), h.NumRecords)
	}
	return nil
}

// statsLegacy measures the magic 0 or 1 message h, or the inner messages of
// the wrapper h.
func (d *Decoder) statsLegacy(h *Batch, s *Stats) error {
	*s = Stats{Batches: 1, Magic: h.Magic, Bytes: h.Size, RecordsBytes: h.Size, UncompressedBytes: h.Size}
	if h.Codec == CodecNone {
		m, _, err := parseLegacyMessage(h.Data)
		if err != nil {
			return &Error{Pos: h.Position, Err: err}
		}
		s.Records = 1
		s.count(m.key, m.value)
		return nil
	}
	wrapper, inner, err := d.legacyInner(h)
	if err != nil {
		return err
	}
	if _, _, err := scanInner(inner, h.Magic); err != nil {
		return &Error{Pos: h.Position, Err: err}
	}
	s.Compressed = 1
	s.RecordsBytes, s.UncompressedBytes = len(wrapper.value), len(inner)
	for len(inner) > 0 {
		m, n, _ := parseLegacyMessage(inner) // scanInner validated every message
		inner = inner[n:]
		s.Records++
		s.count(m.key, m.value)
	}
	return nil
}

func (s *Stats) count(key, value []byte) {
	if key == nil {
		s.NullKeys++
	}
	s.KeyBytes += int64(len(key))
	s.ValueBytes += int64(len(value))
}
