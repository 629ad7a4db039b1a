package safefile

import (
	"fmt"
	"io"
)

// ReadRegular reads a whole regular file of at most limit bytes: ReadAll
// for an input that must be a file (a recording's meta.json, a bench
// result), so a FIFO, a device or a directory in its place is refused
// rather than read as empty or waited on.
func ReadRegular(path string, limit int64) ([]byte, error) {
	in, err := Open(path, Regular)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w of %d bytes", path, ErrTooLarge, limit)
	}
	return b, nil
}
