package segment

import (
	"errors"
	"io"
	"os"

	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/safefile"
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
//
// It reads past damage: a batch that is not valid is reported as a
// damaged byte range and reading resumes at the next valid batch (see
// [Damage] for the rule).
type Reader struct {
	in   *safefile.Input
	f    *os.File
	path string
	size int64
	end  int64 // position where reading stops
	d    *records.Decoder
	rr   *records.Reader
	err  error

	zeroTail     int64
	search       *search
	damages      int
	damagedBytes int64
}

// Open opens the segment file at path for reading from its start. d
// decodes the batches; nil means a Decoder with the default limits. The
// file must be a regular file.
func Open(path string, d *records.Decoder) (*Reader, error) {
	return openAt(path, d, 0)
}

func openAt(path string, d *records.Decoder, start int64) (*Reader, error) {
	in, size, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	if d == nil {
		d = new(records.Decoder)
	}
	r := &Reader{in: in, f: in.File(), path: path, size: size, end: size, d: d, search: newSearch(size)}
	window := scanWindow
	if start > 0 {
		window = seekWindow
	}
	r.seek(start, window)
	return r, nil
}

// openRegular opens path, refusing anything but a regular file: a FIFO or
// a device under a segment's name could block or stream forever. The
// refusal wraps safefile.ErrNotRegular.
func openRegular(path string) (*safefile.Input, int64, error) {
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return nil, 0, err
	}
	size := in.Size()
	if size < 0 {
		in.Close()
		return nil, 0, &Error{Path: path, Pos: -1, Err: errors.New("cannot tell its size")}
	}
	return in, size, nil
}

// seek makes the next batch read start at pos, reading window bytes at a
// time. It reads through a SectionReader, so the file's own offset is
// never shared state.
func (r *Reader) seek(pos int64, window int) {
	pos = min(max(pos, 0), r.size)
	sr := io.NewSectionReader(r.f, pos, r.size-pos)
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

// Damaged returns how many damaged byte ranges Next has reported, and
// their bytes.
func (r *Reader) Damaged() (ranges int, bytes int64) { return r.damages, r.damagedBytes }

// Next returns the next valid batch (its CRC matches). Its Data is valid
// until the next call. At the end of the file it returns io.EOF.
//
// A damaged byte range is returned as an *Error at the range's start
// whose Err is a *Damage (see AsDamage); the next call goes on after it.
// A last batch cut short is such a range of kind Truncated, whose error
// also wraps records.ErrTruncated. Any other error is an *Error naming
// the file and position, one wrapping ErrNotSegment when no batch at all
// is found from the start of the file, and Next keeps returning it.
func (r *Reader) Next() (records.Batch, error) {
	if r.err != nil {
		return records.Batch{}, r.err
	}
	if r.rr.Pos() >= r.end {
		r.err = io.EOF
		return records.Batch{}, io.EOF
	}
	b, err := r.rr.Next()
	switch {
	case err == nil && b.CRCValid:
		return b, nil
	case err == nil:
		return r.damaged(failure{pos: b.Position, size: int64(b.Size), crc: b.CRC})
	case err == io.EOF:
		r.err = io.EOF
		return records.Batch{}, io.EOF
	case isReadError(err):
		r.err = fileError(r.path, r.rr.Pos(), err)
		return records.Batch{}, r.err
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
	return r.damaged(failure{pos: pos, cause: err})
}

// Close closes the file.
func (r *Reader) Close() error { return r.in.Close() }

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
