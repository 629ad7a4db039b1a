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

	"github.com/kscope-dev/kscope/internal/safefile"
)

// Tail reads the whole lines appended to a regular file since the last
// read: a key log that an agent is still writing. A line still without
// its newline waits for it; a line longer than MaxLineBytes is dropped up
// to its newline (and passed on as nil, for its number). A file that
// shrinks is read again from its start.
type Tail struct {
	path     string
	off      int64  // bytes of the file read
	partial  []byte // a last line without its newline yet
	skipping bool   // dropping the rest of an overlong line
	line     int    // lines read
	buf      []byte
}

// NewTail reads path from its start.
func NewTail(path string) *Tail { return &Tail{path: path} }

// Next calls fn with each whole line (newline included) appended since the
// last call, and its line number; a line longer than MaxLineBytes is
// passed as nil. The line is valid during the call.
func (t *Tail) Next(fn func(line []byte, n int)) error {
	// Opened again at every read: the agent's key log may be replaced.
	// Only a regular file is followed: a path that became a FIFO or a
	// device is refused, not waited on or read forever.
	in, err := safefile.Open(t.path, safefile.Regular)
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	defer in.Close()
	file := in.File()
	size := in.Size()
	if size < 0 {
		return fmt.Errorf("tls key log %s: its size is unknown", t.path)
	}
	if size < t.off {
		t.off, t.partial, t.skipping, t.line = 0, t.partial[:0], false, 0
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

// Pending is the number of bytes of a last line still without its
// newline (those of an overlong one not counted).
func (t *Tail) Pending() int { return len(t.partial) }

func (t *Tail) lines(b []byte, fn func([]byte, int)) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			switch {
			case t.skipping:
			case len(t.partial)+len(b) > MaxLineBytes:
				t.line++
				t.partial, t.skipping = t.partial[:0], true
				fn(nil, t.line)
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
			fn(nil, t.line)
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
// A File opened on a pipe or FIFO (--tls-keylog <(cmd), /dev/stdin) reads
// it once, to its end, at most MaxStreamBytes and each read bounded by an
// idle time: a stream cannot be read again.
//
// File is safe for concurrent use.
type File struct {
	keys   *Keys
	path   string
	dir    bool
	stream bool

	mu    sync.Mutex
	tails map[string]*Tail
	own   Stats // the counts of the lines read from path
	last  time.Time
	err   error // the last read error, reported by Err
}

// minRefresh is how often a missing session may make File read the key
// log again: misses come with every record of a connection that waits.
const minRefresh = 20 * time.Millisecond

// OpenFile reads the key log at path, which must exist, into a new Keys:
// a regular file (followed as it grows) or a pipe or FIFO (read once).
// A directory, a device or a socket is refused with an error wrapping
// safefile.ErrNotRegular.
func OpenFile(path string) (*File, error) {
	return openFile(path, New(), safefile.DefaultIdle)
}

// OpenDir reads the key logs (*.log) of the directory path, which must
// exist, and those added to it later.
func OpenDir(path string) (*File, error) {
	return OpenDirInto(path, New())
}

// OpenDirInto is OpenDir adding to keys.
func OpenDirInto(path string, keys *Keys) (*File, error) {
	f := newFile(path, keys)
	f.dir = true
	if err := f.refresh(); err != nil {
		return nil, err
	}
	return f, nil
}

// OpenInto is OpenFile adding the sessions to keys, which may hold
// secrets of other sources already (those win a conflict: Stats).
func OpenInto(path string, keys *Keys) (*File, error) {
	return openFile(path, keys, safefile.DefaultIdle)
}

func newFile(path string, keys *Keys) *File {
	return &File{keys: keys, path: path, tails: make(map[string]*Tail)}
}

// openFile opens path as a stream when it is a pipe or FIFO (reads
// failing after idle without data), as a growing file when regular.
func openFile(path string, keys *Keys, idle time.Duration) (*File, error) {
	in, err := safefile.Open(path, safefile.Stream)
	if err != nil {
		return nil, fmt.Errorf("tls key log: %w", err)
	}
	f := newFile(path, keys)
	if !in.Stream {
		in.Close() // Tail opens it at each read
		if err := f.refresh(); err != nil {
			return nil, err
		}
		return f, nil
	}
	defer in.Close()
	in.SetIdle(idle)
	f.stream = true
	f.last = time.Now()
	if f.own, err = keys.loadLimited(in, path); err != nil {
		return nil, err
	}
	return f, nil
}

// Keys returns the sessions read so far.
func (f *File) Keys() *Keys { return f.keys }

// Path is the key log's path.
func (f *File) Path() string { return f.path }

// Dir says the path is a directory of key logs.
func (f *File) Dir() bool { return f.dir }

// Stream says the key log was a pipe or FIFO, read once when opened:
// lines written to it later are not read.
func (f *File) Stream() bool { return f.stream }

// Stats are the counts of the key log's own lines (Keys().Stats() counts
// those of every source added to the same Keys).
func (f *File) Stats() Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.own
}

// Pending is the number of bytes at the end of the key log(s) that are
// not a whole line yet: a line being written, or a last line its writer
// never ended with a newline, not read.
func (f *File) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, t := range f.tails {
		n += t.Pending()
	}
	return n
}

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
// secrets, which Lookup does not read the key log again for. A stream
// was read whole when opened: there is nothing more to read.
func (f *File) Refresh() {
	if f.stream {
		return
	}
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
	paths, err := f.pathsLocked()
	if err != nil {
		f.err = err
		return f.err
	}
	f.err = nil
	for _, p := range paths {
		t := f.tails[p]
		if t == nil {
			t = NewTail(p)
			f.tails[p] = t
		}
		if err := t.Next(func(line []byte, n int) { f.addLocked(line, p, n) }); err != nil && f.err == nil {
			f.err = err
		}
	}
	return f.err
}

// pathsLocked are the key logs to read: the file, or the directory's
// regular *.log files.
func (f *File) pathsLocked() ([]string, error) {
	if !f.dir {
		return []string{f.path}, nil
	}
	entries, err := os.ReadDir(f.path)
	if err != nil {
		return nil, fmt.Errorf("tls key logs: %w", err)
	}
	var paths []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".log") {
			paths = append(paths, filepath.Join(f.path, e.Name()))
		}
	}
	return paths, nil
}

// addLocked adds a line of the key log p (nil: one too long to read).
func (f *File) addLocked(line []byte, p string, n int) {
	if line == nil {
		f.own.add(f.keys.overlong(p, n), p, n)
		return
	}
	f.own.add(f.keys.add(line, p, n), p, n)
}
