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
		s.add(&b)
		pos += b.Size
	}
	return s, nil
}

// add counts batch b into s.
func (s *HeaderSummary) add(b *Batch) {
	if s.Batches == 0 {
		s.ProducerID, s.MinMagic = b.ProducerID, b.Magic
	}
	s.Batches++
	s.MinMagic = min(s.MinMagic, b.Magic)
	s.Codecs |= 1 << (uint8(b.Codec) & 7)
	s.Transactional = s.Transactional || b.Transactional
}

// Extent is what the headers of a sequence of whole batches say of the
// offsets and times they hold: in a fetch response, the records the
// consumer was given and how old they were.
type Extent struct {
	// Batches counts the whole batches read.
	Batches int
	// FirstOffset is the first batch's base offset: -1 when that is a
	// magic 0 or 1 compressed wrapper, whose header gives only the offset
	// of its last inner message.
	FirstOffset int64
	// LastOffset is the last batch's last offset.
	LastOffset int64
	// FirstTimestamp is the first batch's first timestamp and
	// MaxTimestamp the last batch's largest, in Unix milliseconds; -1
	// for magic 0, which has none. A batch whose base timestamp the log
	// cleaner replaced by its delete horizon (KIP-534) gives -1 as its
	// first timestamp: the header no longer holds it.
	FirstTimestamp int64
	MaxTimestamp   int64
}

// Extent reads the header of each batch in data, stopping at the first
// malformed or truncated one, whose error it returns with the extent of
// the whole batches before it. A fetch response may end with a batch cut
// short: its records were not delivered (a client drops them and fetches
// them again from their start), so only whole batches count. It neither
// checks CRCs nor decompresses, and allocates nothing.
func (d *Decoder) Extent(data []byte) (Extent, error) {
	e := noExtent
	maxSize := d.maxBatchSize()
	for pos := 0; pos < len(data); {
		b, err := parseBatch(data[pos:], int64(pos), maxSize, false)
		if err != nil {
			return e, err
		}
		e.add(&b)
		pos += b.Size
	}
	return e, nil
}

// noExtent is the Extent of no batch.
var noExtent = Extent{FirstOffset: -1, LastOffset: -1, FirstTimestamp: -1, MaxTimestamp: -1}

// add extends e by batch b, which follows the batches e covers.
func (e *Extent) add(b *Batch) {
	if e.Batches == 0 {
		e.FirstOffset, e.FirstTimestamp = b.BaseOffset, b.FirstTimestamp
		if b.DeleteHorizon {
			e.FirstTimestamp = -1
		}
	}
	e.Batches++
	e.LastOffset, e.MaxTimestamp = b.LastOffset, b.MaxTimestamp
}
