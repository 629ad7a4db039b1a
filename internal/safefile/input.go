package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// ErrNotRegular is wrapped by Open's refusal of a path that is not a
// regular file (or, with Stream, not a pipe either).
var ErrNotRegular = errors.New("not a regular file")

// ErrIdle is wrapped by a stream's read error when no byte came within
// its idle bound.
var ErrIdle = errors.New("no data")

// DefaultIdle is how long a stream may send nothing before a read fails.
const DefaultIdle = 30 * time.Second

// Mode says what an input may be.
type Mode int

const (
	// Regular accepts regular files only: inputs that are seeked, sized
	// or read more than once (segments, indexes, JFR, recordings).
	Regular Mode = iota
	// Stream also accepts a pipe or FIFO (/dev/stdin, process
	// substitution, a named FIFO), read once from its start, each read
	// bounded by the idle time.
	Stream
)

// Input is an opened input: the file, and whether it is a stream.
type Input struct {
	// f is not embedded: *os.File's WriteTo would let io.Copy bypass the
	// idle bound.
	f *os.File
	// Stream is true for a pipe or FIFO: no size, no seeking.
	Stream bool
	idle   time.Duration
}

// Open opens path for reading as mode allows: a directory, a device, a
// socket, or (with Regular) a pipe is refused with an error that wraps
// ErrNotRegular and names the path and what it is. A FIFO is opened
// without waiting for a writer: one that has none reads as empty.
func Open(path string, mode Mode) (*Input, error) {
	// Stat first: opening a device (a tape, a terminal) can itself have
	// effects, and a FIFO's open would wait for a writer.
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := check(path, st.Mode(), mode); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	// The path may have been swapped between the stat and the open.
	if st, err = f.Stat(); err != nil {
		f.Close()
		return nil, err
	}
	if err := check(path, st.Mode(), mode); err != nil {
		f.Close()
		return nil, err
	}
	in := &Input{f: f, Stream: st.Mode()&os.ModeNamedPipe != 0, idle: DefaultIdle}
	if !in.Stream {
		// A regular file read without O_NONBLOCK semantics: it has none
		// for regular files, but say so plainly for the next reader.
		_ = syscall.SetNonblock(int(f.Fd()), false)
	}
	return in, nil
}

func check(path string, m os.FileMode, mode Mode) error {
	switch {
	case m.IsRegular():
		return nil
	case m&os.ModeNamedPipe != 0 && mode == Stream:
		return nil
	}
	return fmt.Errorf("%s: %w (%s)", path, ErrNotRegular, Describe(m))
}

// Describe names a file's type in words, for errors.
func Describe(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO or pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "not a regular file"
}

// SetIdle changes the idle bound of a stream (0: none).
func (in *Input) SetIdle(d time.Duration) { in.idle = d }

// Read reads from the file; on a stream, a read that gets nothing for the
// idle bound fails with an error wrapping ErrIdle.
func (in *Input) Read(p []byte) (int, error) {
	if !in.Stream || in.idle <= 0 {
		return in.f.Read(p)
	}
	if err := in.f.SetReadDeadline(time.Now().Add(in.idle)); err != nil {
		return in.f.Read(p)
	}
	n, err := in.f.Read(p)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return n, fmt.Errorf("%s: %w for %v", in.f.Name(), ErrIdle, in.idle)
	}
	return n, err
}

// Close closes the file.
func (in *Input) Close() error { return in.f.Close() }

// Name is the path the input was opened by.
func (in *Input) Name() string { return in.f.Name() }

// File is the underlying file, for callers that seek or read at offsets
// (Regular inputs only: a stream must be read through Read).
func (in *Input) File() *os.File { return in.f }

// Size is the file's size, or -1 for a stream.
func (in *Input) Size() int64 {
	if in.Stream {
		return -1
	}
	st, err := in.f.Stat()
	if err != nil {
		return -1
	}
	return st.Size()
}

// ErrTooLarge is wrapped by ReadAll's error for an input over its limit.
var ErrTooLarge = errors.New("larger than the limit")

// ReadAll reads a whole input of at most limit bytes (a key log, a small
// config): regular files and streams alike, refusing anything else.
func ReadAll(path string, limit int64) ([]byte, error) {
	in, err := Open(path, Stream)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	b, err := io.ReadAll(io.LimitReader(in, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w of %d bytes", path, ErrTooLarge, limit)
	}
	return b, nil
}
