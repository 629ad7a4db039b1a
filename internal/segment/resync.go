package segment

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"strings"

	"github.com/kscope-dev/kscope/internal/records"
)

// The resynchronisation rule (docs/segment.md, "Damage"): when the batch at
// position P is damaged, the reader does not trust its length. It searches
// forward from P+1 for the first position Q where a valid batch starts: a
// plausible header (magic 0, 1 or 2, a length in range that fits in the
// file, sane attributes, offsets and counts) whose CRC matches its bytes
// (CRC-32C for magic 2, CRC-32 for magic 0 and 1). Bytes [P, Q) are one
// damaged range and reading resumes at Q. Without a valid batch after P
// the range runs to the zeros ending the file, or to its end.

// DamageKind says what a damaged byte range of a segment is.
type DamageKind int

const (
	// BadLength is a batch whose length field is impossible (below the
	// minimum for its magic, above the maximum batch size) or disagrees
	// with where the next valid batch starts.
	BadLength DamageKind = iota + 1
	// BadCRC is a batch whose length leads exactly to the next valid
	// batch (or to the end of the data) but whose CRC does not match
	// its bytes: its contents are damaged.
	BadCRC
	// BadHeader is bytes that are not a batch header: an unknown magic,
	// a negative record count, a count the bytes cannot hold.
	BadHeader
	// Truncated is a last batch cut short by the end of the file, with
	// no valid batch after it: normal after a crash.
	Truncated
)

func (k DamageKind) String() string {
	switch k {
	case BadLength:
		return "bad length"
	case BadCRC:
		return "bad CRC"
	case BadHeader:
		return "not a batch header"
	case Truncated:
		return "truncated"
	}
	return fmt.Sprintf("DamageKind(%d)", int(k))
}

// resume says where reading went on after a damaged range.
type resume int

const (
	atBatch resume = iota // a valid batch starts at End
	atZeros               // zeros run from End to the end of the file
	atEOF                 // End is the end of the file
	gaveUp                // the search spent its budget; End is the end of the file
)

// Damage is a damaged byte range [Start, End) of a segment file: what the
// Reader skipped, and why. It is the Err of the *Error that Reader.Next
// returns for it; reading goes on at End.
type Damage struct {
	Start, End int64
	Kind       DamageKind
	// Err is what was found at Start.
	Err  error
	then resume
}

func (d *Damage) Error() string {
	var then string
	switch d.then {
	case atBatch:
		then = fmt.Sprintf("next valid batch at position %d", d.End)
	case atZeros:
		then = "zeros follow to the end of the file"
	case atEOF:
		then = "no valid batch follows"
	case gaveUp:
		then = "no valid batch found before the search for one gave up"
	}
	return fmt.Sprintf("%v: %v; bytes [%d, %d) damaged (%d bytes), %s", d.Kind, d.Err, d.Start, d.End, d.End-d.Start, then)
}

func (d *Damage) Unwrap() error { return d.Err }

// AsDamage returns the Damage err holds, if it reports a damaged range.
func AsDamage(err error) (*Damage, bool) {
	var d *Damage
	ok := errors.As(err, &d)
	return d, ok
}

// Layout of the batch headers the search looks at (records' format).
const (
	prefixLen      = 12 // base offset and length
	v2HeaderLen    = 61 // magic 2 header up to and including the record count
	minLengthV0    = 14
	minLengthV1    = 22
	minLengthV2    = v2HeaderLen - prefixLen
	minRecordV2    = 7 // bytes of the smallest magic 2 record
	minBatchSize   = prefixLen + minLengthV0
	searchChunk    = 64 << 10
	crcChunk       = 64 << 10
	zeroTailMinLen = prefixLen // fewer zeros may be a batch's start, cut short
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// candidate is a plausible batch header found by the search.
type candidate struct {
	size     int64 // prefix included
	crcFrom  int64 // offset in the batch where the checksummed bytes start
	crc      uint32
	castagno bool // CRC-32C (magic 2), else CRC-32 IEEE
}

// plausibleBatch reports whether b, the bytes at a position of the file
// with remaining bytes from there to its end, starts a header that a
// batch Kafka wrote could have. b holds at least min(remaining,
// v2HeaderLen) bytes.
func plausibleBatch(b []byte, remaining, maxSize int64) (candidate, bool) {
	if len(b) < 17 {
		return candidate{}, false
	}
	length := int64(int32(be.Uint32(b[8:])))
	size := prefixLen + length
	if length < minLengthV0 || length > maxSize || size > remaining || int64(be.Uint64(b)) < 0 {
		return candidate{}, false
	}
	switch b[16] {
	case 2:
		return plausibleV2(b, length)
	case 0, 1:
		return plausibleLegacy(b, length)
	}
	return candidate{}, false
}

func plausibleV2(b []byte, length int64) (candidate, bool) {
	if length < minLengthV2 || len(b) < v2HeaderLen {
		return candidate{}, false
	}
	attrs := be.Uint16(b[21:])
	lastDelta := int64(int32(be.Uint32(b[23:])))
	count := int64(int32(be.Uint32(b[57:])))
	codec := attrs & 0x07
	switch {
	case attrs&0xff80 != 0 || codec > 4: // unused bits, unknown codec
		return candidate{}, false
	case lastDelta < 0 || count < 0 || count > lastDelta+1:
		return candidate{}, false
	case codec == 0 && count*minRecordV2 > length-minLengthV2:
		return candidate{}, false
	}
	return candidate{size: prefixLen + length, crcFrom: 21, crc: be.Uint32(b[17:]), castagno: true}, true
}

// plausibleLegacy checks a magic 0 or 1 message: its attributes, and that
// its key and value lengths add up to its length.
func plausibleLegacy(b []byte, length int64) (candidate, bool) {
	magic := b[16]
	attrs := b[17]
	keyAt, minLength, unused := int64(18), int64(minLengthV0), byte(0xf8)
	if magic == 1 {
		keyAt, minLength, unused = 26, minLengthV1, 0xf0
	}
	size := prefixLen + length
	if length < minLength || attrs&unused != 0 || attrs&0x07 > 3 || int64(len(b)) < keyAt+4 {
		return candidate{}, false
	}
	keyLen := int64(int32(be.Uint32(b[keyAt:])))
	valueAt := keyAt + 4 + max(keyLen, 0)
	if keyLen < -1 || valueAt+4 > size {
		return candidate{}, false
	}
	if valueAt+4 <= int64(len(b)) {
		valueLen := int64(int32(be.Uint32(b[valueAt:])))
		if valueLen < -1 || valueAt+4+max(valueLen, 0) != size {
			return candidate{}, false
		}
	}
	return candidate{size: size, crcFrom: 16, crc: be.Uint32(b[12:])}, true
}

// search is the state of the resynchronisation of one Reader.
type search struct {
	buf    []byte // searchChunk plus a header's worth of overlap
	crcBuf []byte
	// budget bounds the bytes the search checksums over the Reader's
	// life: a hostile file full of plausible headers claiming large
	// lengths would otherwise cost its size times the batch size.
	budget int64
	// zeroStart is where the zeros ending the file start (the file size
	// when there are fewer than zeroTailMinLen); -1 until needed.
	zeroStart int64
}

func newSearch(size int64) *search {
	return &search{budget: 2*size + 64<<20, zeroStart: -1}
}

// allocate makes the search's buffers on first use: most files are read
// without damage, and Lookup opens a Reader per traced write.
func (s *search) allocate() {
	if s.buf == nil {
		s.buf = make([]byte, searchChunk+v2HeaderLen)
		s.crcBuf = make([]byte, crcChunk)
	}
}

// findBatch returns the position of the first valid batch starting at or
// after from, with found false when there is none, or none before the
// search's budget ran out (spent true).
func (r *Reader) findBatch(from int64) (pos int64, found, spent bool, err error) {
	s := r.search
	s.allocate()
	maxSize := int64(r.maxBatchSize())
	for start := from; r.size-start >= minBatchSize; start += searchChunk {
		n, err := r.f.ReadAt(s.buf[:min(int64(len(s.buf)), r.size-start)], start)
		if err != nil && !errors.Is(err, io.EOF) {
			return 0, false, false, err
		}
		for i := range min(n, searchChunk) {
			if i+16 < n && s.buf[i+16] > 2 {
				continue // not a magic: the common case, kept inline
			}
			at := start + int64(i)
			c, ok := plausibleBatch(s.buf[i:n], r.size-at, maxSize)
			if !ok {
				continue
			}
			if s.budget < c.size {
				return 0, false, true, nil
			}
			s.budget -= c.size
			sum, err := r.checksum(at+c.crcFrom, at+c.size, c.castagno, s.buf[i+int(c.crcFrom):n])
			if err != nil {
				return 0, false, false, err
			}
			if sum == c.crc {
				return at, true, false, nil
			}
		}
	}
	return 0, false, false, nil
}

// checksum returns the CRC of bytes [from, to) of the file, of which the
// first ones are already in have.
func (r *Reader) checksum(from, to int64, castagno bool, have []byte) (uint32, error) {
	r.search.allocate()
	return checksumAt(r.f, from, to, castagno, have, r.search.crcBuf)
}

// zeroTailStart returns where the zeros ending the file start, or the
// file's size when fewer than zeroTailMinLen zeros end it.
func (r *Reader) zeroTailStart() (int64, error) {
	s := r.search
	if s.zeroStart >= 0 {
		return s.zeroStart, nil
	}
	var buf [32 << 10]byte
	start := r.size
scan:
	for start > 0 {
		n := min(int64(len(buf)), start)
		if _, err := r.f.ReadAt(buf[:n], start-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		for i := n - 1; i >= 0; i-- {
			if buf[i] != 0 {
				start -= n - 1 - i
				break scan
			}
		}
		start -= n
	}
	if r.size-start < zeroTailMinLen {
		start = r.size
	}
	s.zeroStart = start
	return start, nil
}

// failure is what the Reader found wrong at a position: a decoding error,
// or a batch whose CRC does not match.
type failure struct {
	pos   int64
	cause error // the decoder's error; nil for a CRC mismatch
	size  int64 // the batch's size, for a CRC mismatch
	crc   uint32
}

// damaged handles a failure: it finds where the damage ends, classifies
// it, counts it and moves the Reader past it. A failure at the start of a
// file in which no valid batch exists at all is ErrNotSegment, which
// ends the reading.
func (r *Reader) damaged(f failure) (records.Batch, error) {
	next, found, spent, err := r.findBatch(f.pos + 1)
	if err != nil {
		r.err = &Error{Path: r.path, Pos: f.pos, Err: fmt.Errorf("reading: %w", err)}
		return records.Batch{}, r.err
	}
	d, err := r.classify(f, next, found, spent)
	if err != nil {
		r.err = &Error{Path: r.path, Pos: f.pos, Err: fmt.Errorf("reading: %w", err)}
		return records.Batch{}, r.err
	}
	if f.pos == 0 && !found && !spent && d.Kind != BadCRC && d.Kind != Truncated && f.cause != nil {
		r.err = &Error{Path: r.path, Pos: 0, Err: fmt.Errorf("%w: %w", ErrNotSegment, d.Err)}
		return records.Batch{}, r.err
	}
	r.damages++
	r.damagedBytes += d.End - d.Start
	r.seek(d.End, scanWindow)
	return records.Batch{}, &Error{Path: r.path, Pos: d.Start, Err: d}
}

// classify says what the damage at f.pos is and where it ends, given the
// next valid batch (if found).
func (r *Reader) classify(f failure, next int64, found, spent bool) (*Damage, error) {
	d := &Damage{Start: f.pos}
	truncated := errors.Is(f.cause, records.ErrTruncated)
	switch {
	case f.cause == nil: // CRC mismatch
		if err := r.endDamage(d, next, found, spent, f.pos+f.size); err != nil {
			return nil, err
		}
		d.Kind, d.Err = r.crcDamage(f, d.End, found)
		return d, nil
	case truncated && !found:
		end := atEOF
		if spent {
			end = gaveUp
		}
		d.Kind, d.End, d.then, d.Err = Truncated, r.size, end, truncation(f.cause)
		return d, nil
	}
	if err := r.endDamage(d, next, found, spent, f.pos+1); err != nil {
		return nil, err
	}
	kind, length, err := r.headerKind(f.pos)
	if err != nil {
		return nil, err
	}
	d.Kind, d.Err = kind, decoderError(f.cause)
	if truncated { // and a valid batch follows: the length is wrong
		d.Kind, d.Err = BadLength, fmt.Errorf("length %d runs past the end of the file, over the valid batch at position %d", length, next)
	}
	return d, nil
}

// endDamage sets where damage at d.Start that runs at least to atLeast
// ends: at the next valid batch, or else at the zeros ending the file, or
// at its end.
func (r *Reader) endDamage(d *Damage, next int64, found, spent bool, atLeast int64) error {
	if found {
		d.End, d.then = next, atBatch
		return nil
	}
	if spent {
		d.End, d.then = r.size, gaveUp
		return nil
	}
	z, err := r.zeroTailStart()
	if err != nil {
		return err
	}
	d.End, d.then = max(z, min(atLeast, r.size)), atZeros
	if d.End == r.size {
		d.then = atEOF
	}
	return nil
}

// crcDamage classifies a batch whose CRC does not match, now that the
// damage is known to end at end: its length is right if it leads there.
func (r *Reader) crcDamage(f failure, end int64, found bool) (DamageKind, error) {
	length := f.size - prefixLen
	claimedEnd := f.pos + f.size
	switch {
	case end == claimedEnd:
		return BadCRC, fmt.Errorf("CRC mismatch: stored %#08x", f.crc)
	case end > claimedEnd:
		return BadLength, fmt.Errorf("length %d ends at position %d, where no valid batch starts", length, claimedEnd)
	}
	err := fmt.Errorf("length %d runs over the valid batch at position %d", length, end)
	if found && r.crcMatchesUpTo(f, end) {
		err = fmt.Errorf("%w (the stored CRC matches the bytes before it: only the length is wrong)", err)
	}
	return BadLength, err
}

// crcMatchesUpTo reports whether the stored CRC of the batch at f.pos
// matches its bytes up to end, as it would if only its length were
// damaged.
func (r *Reader) crcMatchesUpTo(f failure, end int64) bool {
	var hdr [17]byte
	if _, err := r.f.ReadAt(hdr[:], f.pos); err != nil {
		return false
	}
	from, castagno := f.pos+21, true
	if hdr[16] != 2 {
		from, castagno = f.pos+16, false
	}
	if end <= from {
		return false
	}
	sum, err := r.checksum(from, end, castagno, nil)
	return err == nil && sum == f.crc
}

// headerKind tells a length that no batch can have from other bytes that
// are not a batch header, at a position where the decoder failed, and
// returns the length field.
func (r *Reader) headerKind(pos int64) (DamageKind, int64, error) {
	var hdr [17]byte
	n, err := r.f.ReadAt(hdr[:], pos)
	if err != nil && !errors.Is(err, io.EOF) {
		return 0, 0, err
	}
	if n < prefixLen {
		return Truncated, 0, nil
	}
	length := int64(int32(be.Uint32(hdr[8:])))
	minLength := int64(minLengthV0)
	if n == len(hdr) && hdr[16] == 1 {
		minLength = minLengthV1
	} else if n == len(hdr) && hdr[16] == 2 {
		minLength = minLengthV2
	}
	if length < minLength || length > int64(r.maxBatchSize()) {
		return BadLength, length, nil
	}
	return BadHeader, length, nil
}

func (r *Reader) maxBatchSize() int {
	if r.d.MaxBatchSize > 0 {
		return r.d.MaxBatchSize
	}
	return records.DefaultMaxBatchSize
}

// decoderError drops the records package's "batch at position N" prefix:
// the Damage's error prints the position.
func decoderError(err error) error {
	var re *records.Error
	if errors.As(err, &re) {
		return re.Err
	}
	return err
}

// truncatedError is a truncation's detail: it wraps records.ErrTruncated
// without repeating the kind's name.
type truncatedError struct{ detail string }

func (e *truncatedError) Error() string { return e.detail }
func (e *truncatedError) Unwrap() error { return records.ErrTruncated }

func truncation(cause error) error {
	detail := strings.TrimPrefix(decoderError(cause).Error(), records.ErrTruncated.Error()+": ")
	return &truncatedError{detail + " (the last batch is cut short: normal after a crash)"}
}

// isReadError reports whether a decoder error is a failure to read the
// file rather than a finding about its bytes.
func isReadError(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) || errors.Is(err, io.ErrNoProgress)
}
