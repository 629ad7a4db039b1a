package records

import (
	"errors"
	"fmt"
	"io"
)

// Reader reads batches one at a time from a stream, such as a segment
// file, with bounded memory: it keeps one buffer that grows to the largest
// batch read, never beyond the Decoder's MaxBatchSize. Since a stream's
// remaining length is unknown, the buffer grows with the bytes actually
// read, not by the length a batch claims, so a bogus length costs at most
// about twice the bytes that are really there.
type Reader struct {
	d   *Decoder
	r   io.Reader
	pos int64
	buf []byte
	err error
}

// readChunk is the first step of growing the buffer for a batch.
const readChunk = 64 << 10

// NewReader returns a Reader over r, whose first byte is at position pos of
// the input (0 for a whole file, or where a read started within one).
func (d *Decoder) NewReader(r io.Reader, pos int64) *Reader {
	return &Reader{d: d, r: r, pos: pos}
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
	r.pos += int64(b.Size)
	return b, nil
}

func (r *Reader) next() (Batch, error) {
	maxSize := r.d.maxBatchSize()
	// The first 17 bytes hold the length and the magic, enough to
	// validate the batch's size before reading it.
	if cap(r.buf) < magicEnd {
		r.buf = make([]byte, 0, readChunk)
	}
	have, err := io.ReadFull(r.r, r.buf[:magicEnd])
	if err == io.EOF {
		return Batch{}, io.EOF
	}
	if err != nil && err != io.ErrUnexpectedEOF {
		return Batch{}, &Error{Pos: r.pos, Err: fmt.Errorf("reading: %w", err)}
	}
	size, err := batchSize(r.buf[:have], r.pos, maxSize)
	if err != nil {
		return Batch{}, err
	}
	if have < magicEnd {
		return Batch{}, errorf(r.pos, "%w: length %d exceeds remaining %d bytes", ErrTruncated, size-prefixLen, have-prefixLen)
	}
	for have < size {
		// Double what was read so far, so the buffer never runs more
		// than twice ahead of the bytes the stream really holds.
		want := min(size, max(2*have, readChunk))
		if cap(r.buf) < want {
			grown := make([]byte, want, max(want, min(size, 2*cap(r.buf))))
			copy(grown, r.buf[:have])
			r.buf = grown
		}
		n, err := io.ReadFull(r.r, r.buf[have:want])
		have += n
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return Batch{}, errorf(r.pos, "%w: length %d exceeds remaining %d bytes", ErrTruncated, size-prefixLen, have-prefixLen)
		}
		if err != nil {
			return Batch{}, &Error{Pos: r.pos, Err: fmt.Errorf("reading: %w", err)}
		}
	}
	return parseBatch(r.buf[:size], r.pos, maxSize, true)
}
