package records

// HeaderSummary describes a sequence of batches by their headers alone:
// what a produce request says of its producer's settings (compression,
// idempotence, transactions, format), read without checking CRCs or
// decompressing anything.
type HeaderSummary struct {
	// Batches counts the batches (magic 0 and 1: top-level messages).
	Batches int
	// MinMagic is the lowest format version among them.
	MinMagic int8
	// Codecs has bit c set for each codec c the batches use.
	Codecs uint8
	// ProducerID is the first batch's producer id (-1 for magic 0 and 1,
	// and for producers that are not idempotent).
	ProducerID int64
	// Transactional is set when a batch is transactional.
	Transactional bool
}

// Codec returns the batches' codec as its name, "mixed" when they use
// more than one, "" when there are none.
func (s HeaderSummary) Codec() string {
	switch {
	case s.Codecs == 0:
		return ""
	case s.Codecs&(s.Codecs-1) != 0:
		return "mixed"
	}
	for c := Codec(0); c < 8; c++ {
		if s.Codecs == 1<<c {
			return c.String()
		}
	}
	return ""
}

// SummarizeHeaders reads the header of each batch in data, stopping at
// the first malformed or truncated one (whose error it returns with what
// was read before it).
func (d *Decoder) SummarizeHeaders(data []byte) (HeaderSummary, error) {
	s := HeaderSummary{ProducerID: -1}
	maxSize := d.maxBatchSize()
	for pos := 0; pos < len(data); {
		b, err := parseBatch(data[pos:], int64(pos), maxSize, false)
		if err != nil {
			return s, err
		}
		if s.Batches == 0 {
			s.ProducerID, s.MinMagic = b.ProducerID, b.Magic
		}
		s.Batches++
		s.MinMagic = min(s.MinMagic, b.Magic)
		s.Codecs |= 1 << (uint8(b.Codec) & 7)
		s.Transactional = s.Transactional || b.Transactional
		pos += b.Size
	}
	return s, nil
}
