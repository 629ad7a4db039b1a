package tlskeys

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Tail reads the whole lines appended to a file since the last read: a
// key log that an agent is still writing. A line still without its
// newline waits for it; a line longer than MaxLineBytes is dropped (and
// counted) up to its newline. A file that shrinks is read again from its
// start.
type Tail struct {
	path     string
	off      int64  // bytes of the file read
	partial  []byte // a last line without its newline yet
	skipping bool   // dropping the rest of an overlong line
	line     int    // lines read
	overlong int    // lines dropped as overlong
	buf      []byte
}

// NewTail reads path from its start.
func NewTail(path string) *Tail { return &Tail{path: path} }

// Next calls fn with each whole line (newline included) appended since the
// last call, and its line number. The line is valid during the call.
func (t *Tail) Next(fn func(line []byte, n int)) error {
	file, err := os.Open(t.path)
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	if st.Size() < t.off {
		t.off, t.partial, t.skipping = 0, t.partial[:0], false
	}
	if _, err := file.Seek(t.off, io.SeekStart); err != nil {
		return fmt.Errorf("tls key log %s: %w", t.path, err)
	}
	if t.buf == nil {
		t.buf = make([]byte, 64<<10)
	}
	for {
		n, err := file.Read(t.buf)
		t.off += int64(n)
		t.lines(t.buf[:n], fn)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("tls key log %s (line %d): %w", t.path, t.line, err)
		}
	}
}

func (t *Tail) lines(b []byte, fn func([]byte, int)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			switch {
			case t.skipping:
			case len(t.partial)+len(b) > MaxLineBytes:
				t.line++
				t.overlong++
				t.partial, t.skipping = t.partial[:0], true
			default:
				t.partial = append(t.partial, b...)
			}
			return
		}
		line := b[:i+1]
		b = b[i+1:]
		if t.skipping {
			t.skipping = false
			continue
		}
		t.line++
		if len(t.partial) > 0 {
			line = append(t.partial, line...)
			t.partial = t.partial[:0]
		}
		if len(line) > MaxLineBytes {
			t.overlong++
			continue
		}
		fn(line, t.line)
	}
}

// File is a key log file that may still be growing: the broker's key-log
// agent appends a session's secrets as its handshake derives them, while
// a live capture is being decoded. A Lookup that misses reads what was
// appended since the last read (at most every minRefresh), so a session
// whose lines were written a moment ago is found.
//
// A File opened on a directory (OpenDir) reads every *.log file in it,
// those that appear later too: the key logs of several JVMs.
//
// File is safe for concurrent use.
type File struct {
	keys *Keys
	path string
	dir  bool

	mu       sync.Mutex
	tails    map[string]*Tail
	overlong map[string]int // of each tail's, counted in keys
	last     time.Time
	err      error // the last read error, reported by Err
}

// minRefresh is how often a missing session may make File read the key
// log again: misses come with every record of a connection that waits.
const minRefresh = 20 * time.Millisecond

// OpenFile reads the key log at path, which must exist, into a new Keys.
func OpenFile(path string) (*File, error) {
	return open(path, false)
}

// OpenDir reads the key logs (*.log) of the directory path, which must
// exist, and those added to it later.
func OpenDir(path string) (*File, error) {
	return open(path, true)
}

func open(path string, dir bool) (*File, error) {
	f := &File{keys: New(), path: path, dir: dir, tails: make(map[string]*Tail), overlong: make(map[string]int)}
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
	f.Refresh()
	return f.keys.Lookup(cr)
}

// LookupSessionID returns a TLS 1.2 master secret by session id, reading
// the lines appended since the last read when it is not known yet.
func (f *File) LookupSessionID(id []byte) (Secret, bool) {
	if m, ok := f.keys.LookupSessionID(id); ok {
		return m, true
	}
	f.Refresh()
	return f.keys.LookupSessionID(id)
}

// Refresh reads what the key log added since the last read, unless that
// was less than minRefresh ago: for a session found with only some of its
// secrets, which Lookup does not read the key log again for.
func (f *File) Refresh() {
	f.mu.Lock()
	due := time.Since(f.last) >= minRefresh
	f.mu.Unlock()
	if due {
		_ = f.refresh() // Err reports it
	}
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
	paths := []string{f.path}
	if f.dir {
		entries, err := os.ReadDir(f.path)
		if err != nil {
			f.err = fmt.Errorf("tls key logs: %w", err)
			return f.err
		}
		paths = paths[:0]
		for _, e := range entries {
			if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".log") {
				paths = append(paths, filepath.Join(f.path, e.Name()))
			}
		}
	}
	f.err = nil
	for _, p := range paths {
		t := f.tails[p]
		if t == nil {
			t = NewTail(p)
			f.tails[p] = t
		}
		if err := t.Next(func(line []byte, n int) { f.keys.Add(line, p, n) }); err != nil && f.err == nil {
			f.err = err
		}
		for ; f.overlong[p] < t.overlong; f.overlong[p]++ {
			f.keys.malformed(p, t.line)
		}
	}
	return f.err
}
