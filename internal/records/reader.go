package records

import (
	"errors"
	"fmt"
	"io"
)

// Reader reads batches one at a time from a stream, such as a segment
// file, with bounded memory.
//
// It reads the stream in large chunks into one window buffer and decodes
// batches where they lie in it, so that every byte is copied once, by the
// kernel. The window grows only to hold the largest batch actually read,
// never beyond the Decoder's MaxBatchSize; and since a stream's remaining
// length is unknown, it grows with the bytes actually read, not by the
// length a batch claims, so a bogus length costs at most about twice the
// bytes that are really there.
type Reader struct {
	d          *Decoder
	chunk      int // least the window asks the stream for
	r          io.Reader
	pos        int64  // stream position of buf[start]
	buf        []byte // window: buf[start:end] holds unread bytes
	start, end int
	eof        bool // r has returned io.EOF
	err        error
}

// readChunk is the default window size: the least a refill asks for.
const readChunk = 1 << 20

// NewReader returns a Reader over r, whose first byte is at position pos of
// the input (0 for a whole file, or where a read started within one).
func (d *Decoder) NewReader(r io.Reader, pos int64) *Reader {
	return d.NewReaderSize(r, pos, readChunk)
}

// NewReaderSize is NewReader with a window of chunk bytes (at least 64):
// large for scanning a whole file, small for reading a few batches.
func (d *Decoder) NewReaderSize(r io.Reader, pos int64, chunk int) *Reader {
	return &Reader{d: d, r: r, pos: pos, chunk: max(chunk, 64)}
}

// Pos returns the position of the next batch.
func (r *Reader) Pos() int64 { return r.pos }

// Next returns the next batch. Its Data is valid until the next call. At
// the end of the stream it returns io.EOF; when the stream ends inside a
// batch, an *Error wrapping ErrTruncated. After any error, Next keeps
// returning it.
func (r *Reader) Next() (Batch, error) {
	if r.err != nil {
		return Batch{}, r.err
	}
	b, err := r.next()
	if err != nil {
		r.err = err
		return Batch{}, err
	}
	r.start += b.Size
	r.pos += int64(b.Size)
	return b, nil
}

func (r *Reader) next() (Batch, error) {
	maxSize := r.d.maxBatchSize()
	if err := r.fill(magicEnd); err != nil {
		return Batch{}, err
	}
	have := r.end - r.start
	if have == 0 {
		return Batch{}, io.EOF
	}
	size, err := batchSize(r.buf[r.start:r.end], r.pos, maxSize)
	if err != nil {
		return Batch{}, err
	}
	if have < magicEnd {
		return Batch{}, errorf(r.pos, "%w: length %d exceeds remaining %d bytes", ErrTruncated, size-prefixLen, have-prefixLen)
	}
	// Grow towards the claimed size step by step, as bytes arrive.
	for have < size {
		want := min(size, max(2*have, r.chunk))
		if err := r.fill(want); err != nil {
			return Batch{}, err
		}
		if r.end-r.start == have { // no progress: the stream ended
			return Batch{}, errorf(r.pos, "%w: length %d exceeds remaining %d bytes", ErrTruncated, size-prefixLen, have-prefixLen)
		}
		have = r.end - r.start
	}
	return parseBatch(r.buf[r.start:r.start+size], r.pos, maxSize, true)
}

// fill makes the window hold at least n unread bytes, or as many as the
// stream has left. It moves unread bytes to the front and grows the buffer
// to at most max(n, chunk), then reads as much as fits.
func (r *Reader) fill(n int) error {
	if r.end-r.start >= n || r.eof {
		return nil
	}
	if r.start+n > cap(r.buf) {
		size := max(n, r.chunk)
		if cap(r.buf) >= size {
			copy(r.buf[:cap(r.buf)], r.buf[r.start:r.end])
		} else {
			grown := make([]byte, size)
			copy(grown, r.buf[r.start:r.end])
			r.buf = grown
		}
		r.end -= r.start
		r.start = 0
	}
	r.buf = r.buf[:cap(r.buf)]
	for r.end-r.start < n {
		m, err := r.r.Read(r.buf[r.end:])
		r.end += m
		if errors.Is(err, io.EOF) {
			r.eof = true
			return nil
		}
		if err != nil {
			return &Error{Pos: r.pos, Err: fmt.Errorf("reading: %w", err)}
		}
		if m == 0 {
			return &Error{Pos: r.pos, Err: fmt.Errorf("reading: %w", io.ErrNoProgress)}
		}
	}
	return nil
}
