package segment

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/kscope-dev/kscope/internal/records"
)

// Window sizes of the batch reader: a scan of a whole file reads 1 MiB at
// a time (few system calls, and batches are decoded where they lie in the
// window, so each byte is copied once); reading a few batches from an
// index position (Lookup) needs much less.
const (
	scanWindow = 1 << 20
	seekWindow = 64 << 10
)

// Reader reads the batches of one .log file in order. Its memory is the
// read-ahead buffer plus one buffer as large as the largest batch, which
// the Decoder's MaxBatchSize bounds.
type Reader struct {
	f    *os.File
	path string
	size int64
	end  int64 // position where reading stops
	d    *records.Decoder
	rr   *records.Reader
	err  error

	zeroTail int64
}

// Open opens the segment file at path for reading from its start. d
// decodes the batches; nil means a Decoder with the default limits. The
// file must be a regular file.
func Open(path string, d *records.Decoder) (*Reader, error) {
	return openAt(path, d, 0)
}

func openAt(path string, d *records.Decoder, start int64) (*Reader, error) {
	f, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	if d == nil {
		d = new(records.Decoder)
	}
	r := &Reader{f: f, path: path, size: size, end: size, d: d}
	r.seek(start)
	return r, nil
}

// openRegular opens path, refusing anything but a regular file: a FIFO or
// a device under a segment's name could block or stream forever.
func openRegular(path string) (*os.File, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, 0, &Error{Path: path, Pos: -1, Err: errors.New("not a regular file")}
	}
	return f, fi.Size(), nil
}

// seek makes the next batch read start at pos. It reads through a
// SectionReader, so the file's own offset is never shared state.
func (r *Reader) seek(pos int64) {
	pos = min(max(pos, 0), r.size)
	sr := io.NewSectionReader(r.f, pos, r.size-pos)
	window := scanWindow
	if pos > 0 {
		window = seekWindow
	}
	// A small file, or the tail of one, needs no larger window.
	r.rr = r.d.NewReaderSize(sr, pos, int(min(int64(window), max(r.size-pos, 64))))
	r.err = nil
}

// Path returns the file's path.
func (r *Reader) Path() string { return r.path }

// Size returns the file's size when it was opened.
func (r *Reader) Size() int64 { return r.size }

// Pos returns the position of the next batch.
func (r *Reader) Pos() int64 { return r.rr.Pos() }

// Decoder returns the Decoder the Reader decodes with, for decoding the
// records of the batches it returns.
func (r *Reader) Decoder() *records.Decoder { return r.d }

// ZeroTail returns how many bytes of zeros ended the file, found when the
// Reader reached them. Kafka preallocates segment files when
// file.preallocate is set, and a crash can leave the zeros after the last
// batch; they are not batches and not corruption.
func (r *Reader) ZeroTail() int64 { return r.zeroTail }

// Next returns the next batch. Its Data is valid until the next call. At
// the end of the file it returns io.EOF. Any other error is an *Error
// naming the file and position: one wrapping records.ErrTruncated for a
// last batch cut short, one wrapping ErrNotSegment when the file does not
// start with a batch. After an error, Next keeps returning it.
func (r *Reader) Next() (records.Batch, error) {
	if r.err != nil {
		return records.Batch{}, r.err
	}
	if r.rr.Pos() >= r.end {
		r.err = io.EOF
		return records.Batch{}, io.EOF
	}
	b, err := r.rr.Next()
	if err == nil {
		return b, nil
	}
	if err == io.EOF {
		r.err = io.EOF
		return records.Batch{}, io.EOF
	}
	pos := r.rr.Pos()
	// At least a whole zero prefix: its length 0 is no batch's, whereas
	// fewer zero bytes may be the start of a batch's base offset, cut
	// short.
	if r.size-pos >= 12 {
		if zeros, zerr := allZero(r.f, pos, r.size); zerr == nil && zeros {
			r.zeroTail = r.size - pos
			r.err = io.EOF
			return records.Batch{}, io.EOF
		}
	}
	e := fileError(r.path, pos, err).(*Error)
	if pos == 0 && !errors.Is(err, records.ErrTruncated) {
		e.Err = fmt.Errorf("%w: %w", ErrNotSegment, e.Err)
	}
	r.err = e
	return records.Batch{}, r.err
}

// Close closes the file.
func (r *Reader) Close() error { return r.f.Close() }

// allZero reports whether bytes [from, to) of f are all zero, reading them
// in small chunks.
func allZero(f io.ReaderAt, from, to int64) (bool, error) {
	var buf [32 << 10]byte
	for pos := from; pos < to; {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), to-pos)], pos)
		for _, c := range buf[:n] {
			if c != 0 {
				return false, nil
			}
		}
		pos += int64(n)
		if err != nil && pos < to {
			return false, err
		}
	}
	return true, nil
}
