package records

// DefaultIDHeader is the record header that callers read message ids from
// by default.
const DefaultIDHeader = "message-id"

// MessageIDs returns the number of records in the batch sequence data and
// the values of every record header named header, in order. It is built for
// the wire decoder's hot path: it does not check CRCs, and with an empty
// header name it neither decompresses nor decodes records, taking magic 2
// record counts from the batch headers. Null header values are skipped.
//
// A magic 0 or 1 compressed wrapper states no record count, so its inner
// messages are decompressed and counted even when header is empty; those
// formats have no headers, hence no ids.
//
// On error, records and ids cover the batches before the failing one. An
// error wrapping ErrTruncated is the normal end of a fetch response that
// ends with a partial batch.
//
// Apart from growing the Decoder's buffers, a call allocates the returned
// slice and one string that all the ids share.
func (d *Decoder) MessageIDs(data []byte, header string) (records int, ids []string, err error) {
	d.ids.reset()
	defer d.ids.trim()
	maxSize := d.maxBatchSize()
	for pos := 0; pos < len(data); {
		b, err := parseBatch(data[pos:], int64(pos), maxSize, false)
		if err != nil {
			return records, d.ids.strings(), err
		}
		mark := d.ids.mark()
		n, err := d.batchIDs(&b, header)
		if err != nil {
			d.ids.rewind(mark)
			return records, d.ids.strings(), err
		}
		records += n
		pos += b.Size
	}
	return records, d.ids.strings(), nil
}

// batchIDs returns b's record count, adding the values of header to d.ids.
func (d *Decoder) batchIDs(b *Batch, header string) (int, error) {
	if b.Magic != 2 {
		if b.NumRecords >= 0 {
			return b.NumRecords, nil
		}
		return d.CountRecords(*b)
	}
	if header == "" {
		return b.NumRecords, nil
	}
	err := d.eachRecordV2(b, func(r *rawRecord) bool {
		for _, h := range r.headers {
			if h.value != nil && string(h.key) == header {
				d.ids.add(h.value)
			}
		}
		return true
	})
	return b.NumRecords, err
}

// idScratch collects id bytes back to back, so that the ids of a call are
// converted to strings with one allocation.
type idScratch struct {
	buf  []byte
	ends []int
}

// maxRetainedIDBytes bounds the scratch memory a Decoder keeps between
// calls; one call with unusually many or long ids should not pin it.
const maxRetainedIDBytes = 1 << 20

func (s *idScratch) reset() {
	s.buf, s.ends = s.buf[:0], s.ends[:0]
}

func (s *idScratch) trim() {
	if cap(s.buf) > maxRetainedIDBytes || cap(s.ends) > maxRetainedIDBytes/8 {
		*s = idScratch{}
	}
}

func (s *idScratch) add(v []byte) {
	s.buf = append(s.buf, v...)
	s.ends = append(s.ends, len(s.buf))
}

func (s *idScratch) mark() int { return len(s.ends) }

func (s *idScratch) rewind(mark int) {
	s.ends = s.ends[:mark]
	if mark == 0 {
		s.buf = s.buf[:0]
	} else {
		s.buf = s.buf[:s.ends[mark-1]]
	}
}

func (s *idScratch) strings() []string {
	if len(s.ends) == 0 {
		return nil
	}
	all := string(s.buf)
	ids := make([]string, len(s.ends))
	start := 0
	for i, end := range s.ends {
		ids[i] = all[start:end]
		start = end
	}
	return ids
}
