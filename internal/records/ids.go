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
	records, err, _ = d.walk(data, header, nil, nil)
	return records, d.ids.strings(), err
}

// ProduceSummary is what one walk over a produce partition's batches
// says: [Decoder.MessageIDs]' results and [Decoder.SummarizeHeaders]',
// each with the error that call returns on the same data.
type ProduceSummary struct {
	Records int
	IDs     []string
	IDsErr  error

	Headers    HeaderSummary
	HeadersErr error
}

// SummarizeProduce reads data's batches once for both MessageIDs(data,
// header) and SummarizeHeaders(data): the wire decoder reads both from
// every partition of every produce request, and a second walk over the
// batches was the largest part of what the clients view added to the
// agent's cost per request. It allocates what MessageIDs does.
func (d *Decoder) SummarizeProduce(data []byte, header string) ProduceSummary {
	d.ids.reset()
	defer d.ids.trim()
	s := ProduceSummary{Headers: HeaderSummary{ProducerID: -1}}
	s.Records, s.IDsErr, s.HeadersErr = d.walk(data, header, &s.Headers, nil)
	s.IDs = d.ids.strings()
	return s
}

// FetchSummary is what one walk over a fetch response partition's
// batches says: [Decoder.MessageIDs]' results and [Decoder.Extent]'s,
// each with the error that call returns on the same data.
type FetchSummary struct {
	Records int
	IDs     []string
	IDsErr  error

	Extent    Extent
	ExtentErr error
}

// SummarizeFetch reads data's batches once for both MessageIDs(data,
// header) and Extent(data), as SummarizeProduce does for produce
// requests: a fetch response holds many batches, each read twice before.
func (d *Decoder) SummarizeFetch(data []byte, header string) FetchSummary {
	d.ids.reset()
	defer d.ids.trim()
	s := FetchSummary{Extent: noExtent}
	s.Records, s.IDsErr, s.ExtentErr = d.walk(data, header, nil, &s.Extent)
	s.IDs = d.ids.strings()
	return s
}

// walk counts data's records and adds the ids in header to d.ids, up to
// the first batch that is malformed or whose records fail (idsErr). With
// a non-nil hs or ext it also summarizes the batch headers into them up
// to the first malformed one (headersErr), as SummarizeHeaders and
// Extent do: a batch whose records fail, such as a magic 1 wrapper that
// does not decompress, has a header all the same, and so do the batches
// after it.
func (d *Decoder) walk(data []byte, header string, hs *HeaderSummary, ext *Extent) (records int, idsErr, headersErr error) {
	headers := hs != nil || ext != nil
	maxSize := d.maxBatchSize()
	for pos := 0; pos < len(data); {
		b, err := parseBatch(data[pos:], int64(pos), maxSize, false)
		if err != nil {
			if idsErr == nil {
				idsErr = err
			}
			if !headers {
				return records, idsErr, nil
			}
			return records, idsErr, err
		}
		if hs != nil {
			hs.add(&b)
		}
		if ext != nil {
			ext.add(&b)
		}
		if idsErr == nil {
			mark := d.ids.mark()
			n, err := d.batchIDs(&b, header)
			switch {
			case err == nil:
				records += n
			case !headers:
				d.ids.rewind(mark)
				return records, err, nil
			default:
				d.ids.rewind(mark)
				idsErr = err
			}
		}
		pos += b.Size
	}
	return records, idsErr, nil
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
