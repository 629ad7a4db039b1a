package tlskeys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// File is a key log file that may still be growing: the broker's key-log
// agent appends a session's secrets as its handshake derives them, while
// a live capture is being decoded. A Lookup that misses reads what was
// appended since the last read (at most every minRefresh), so a session
// whose lines were written a moment ago is found. Only whole lines are
// read: a line the agent is still writing waits for its newline.
//
// File is safe for concurrent use.
type File struct {
	keys *Keys
	path string

	mu       sync.Mutex
	off      int64  // bytes of the file read
	partial  []byte // a last line without its newline yet
	skipping bool   // dropping the rest of an overlong line
	line     int    // lines read
	last     time.Time
	err      error // the last read error, reported by Err
}

// minRefresh is how often a missing session may make File read the key
// log again: misses come with every record of a connection that waits.
const minRefresh = 20 * time.Millisecond

// OpenFile reads the key log at path, which must exist, into a new Keys.
func OpenFile(path string) (*File, error) {
	f := &File{keys: New(), path: path}
	if err := f.refresh(); err != nil {
		return nil, err
	}
	return f, nil
}

// Keys returns the sessions read so far.
func (f *File) Keys() *Keys { return f.keys }

// Path is the key log's path.
func (f *File) Path() string { return f.path }

// Lookup returns the session's secrets, reading the lines appended to the
// key log since the last read when they are not known yet.
func (f *File) Lookup(cr ClientRandom) (Session, bool) {
	if s, ok := f.keys.Lookup(cr); ok {
		return s, true
	}
	f.mu.Lock()
	due := time.Since(f.last) >= minRefresh
	f.mu.Unlock()
	if !due {
		return Session{}, false
	}
	if err := f.refresh(); err != nil {
		return Session{}, false
	}
	return f.keys.Lookup(cr)
}

// Err returns the last error reading the key log again (nil when the last
// read worked).
func (f *File) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// refresh reads the whole lines appended since the last read.
func (f *File) refresh() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.last = time.Now()
	f.err = f.readNew()
	return f.err
}

func (f *File) readNew() error {
	file, err := os.Open(f.path)
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	if st.Size() < f.off {
		// Truncated or replaced: read it from the start again (known
		// sessions stay).
		f.off, f.partial = 0, nil
	}
	if _, err := file.Seek(f.off, io.SeekStart); err != nil {
		return fmt.Errorf("tls key log %s: %w", f.path, err)
	}
	buf := make([]byte, 64<<10)
	for {
		n, err := file.Read(buf)
		f.off += int64(n)
		f.lines(buf[:n])
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tls key log %s (line %d): %w", f.path, f.line, err)
		}
	}
}

// lines adds the whole lines of b (after any partial line kept from the
// last read) and keeps the rest. A line longer than MaxLineBytes is
// counted as malformed and skipped up to its newline.
func (f *File) lines(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			switch {
			case f.skipping:
			case len(f.partial)+len(b) > MaxLineBytes:
				f.line++
				f.keys.malformed(f.path, f.line)
				f.partial, f.skipping = f.partial[:0], true
			default:
				f.partial = append(f.partial, b...)
			}
			return
		}
		line := b[:i+1]
		b = b[i+1:]
		if f.skipping {
			f.skipping = false
			continue
		}
		f.line++
		if len(f.partial) > 0 {
			line = append(f.partial, line...)
			f.partial = f.partial[:0]
		}
		if len(line) > MaxLineBytes {
			f.keys.malformed(f.path, f.line)
			continue
		}
		f.keys.Add(line, f.path, f.line)
	}
}
