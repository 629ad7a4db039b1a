package records

import (
	"errors"
	"fmt"
)

// ErrTruncated is wrapped by the error for a batch that the input ends
// inside of. The batches before it are intact. Callers decoding fetch
// responses or the tail of a segment usually treat it as the normal end of
// the input rather than as corruption.
var ErrTruncated = errors.New("truncated batch")

// ErrTooLarge is wrapped by the error for a compressed batch whose records
// decompress to more than [Decoder.MaxDecompressedSize] bytes.
var ErrTooLarge = errors.New("decompressed size exceeds limit")

// Error is a decoding error, located at the batch it was found in. Any error
// that wraps neither [ErrTruncated] nor [ErrTooLarge] means the input is
// malformed.
type Error struct {
	// Pos is the batch's byte offset within the input (for a [Reader], the
	// position passed to [Decoder.NewReader] plus the bytes read).
	Pos int64
	// Err describes what is wrong.
	Err error
}

func (e *Error) Error() string {
	return fmt.Sprintf("records: batch at position %d: %v", e.Pos, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// errorf returns an *Error at pos; format may use %w.
func errorf(pos int64, format string, args ...any) error {
	return &Error{Pos: pos, Err: fmt.Errorf(format, args...)}
}
