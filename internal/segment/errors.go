package segment

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kscope-dev/kscope/internal/records"
)

// ErrNotSegment is wrapped by the error for a file whose first bytes are
// not a record batch, such as a file that is not a segment at all.
var ErrNotSegment = errors.New("not a Kafka log segment")

// Error is a problem at a byte position of a file.
type Error struct {
	Path string
	// Pos is the byte position in the file (of the batch or index entry
	// concerned), -1 when the problem is with the file as a whole.
	Pos int64
	Err error
}

func (e *Error) Error() string {
	if e.Pos < 0 {
		return fmt.Sprintf("%s: %v", e.Path, e.Err)
	}
	return fmt.Sprintf("%s: position %d: %v", e.Path, e.Pos, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// fileError returns an *Error: it wraps a records error (which carries its own position) or any
// other error into an *Error for path. The records package's "records:
// batch at position N:" prefix is dropped, since Error prints the position.
func fileError(path string, pos int64, err error) error {
	var re *records.Error
	if errors.As(err, &re) {
		return &Error{Path: path, Pos: re.Pos, Err: re.Err}
	}
	return &Error{Path: path, Pos: pos, Err: err}
}

var be = binary.BigEndian

// batchError wraps an error from decoding the records of the batch at
// batchPos, whose records.Error positions count from the batch's start.
func batchError(path string, batchPos int64, err error) error {
	var re *records.Error
	if errors.As(err, &re) {
		return &Error{Path: path, Pos: batchPos + re.Pos, Err: re.Err}
	}
	return &Error{Path: path, Pos: batchPos, Err: err}
}
