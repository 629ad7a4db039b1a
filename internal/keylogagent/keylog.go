package keylogagent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"
)

// keyLog is the key log file while Attach holds it: open, locked, 0600,
// owned by the JVM's user.
type keyLog struct {
	f       *os.File
	path    string
	created bool // by openKeyLog, this time
}

// openKeyLog opens path for appending, creating it if missing (an
// existing key log is kept and appended to: it may be an earlier attach's,
// or hold other keys), and takes an exclusive flock on it so that Attach
// calls with the same key log run one at a time. It refuses a symbolic
// link or anything but a regular file (Attach, run as root, would else
// chown whatever the link points at), makes the file mode 0600 (also when
// it existed with another mode) and gives it to the JVM's uid and gid so
// that the JVM, which reopens it by name for every secret, may append to
// it.
func openKeyLog(path string, j *jvm) (*keyLog, error) {
	created := true
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if errors.Is(err, os.ErrExist) {
		created = false
		// O_NONBLOCK: a FIFO planted there must not hang the open (it is
		// refused below, as anything but a regular file).
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	}
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("key log %s is a symbolic link: give the file's own path", path)
	}
	if err != nil {
		return nil, fmt.Errorf("key log: %w", err)
	}
	k := &keyLog{f: f, path: path, created: created}
	if err := k.prepare(j); err != nil {
		k.abandon()
		return nil, err
	}
	return k, nil
}

func (k *keyLog) prepare(j *jvm) error {
	st, err := k.f.Stat()
	if err != nil {
		return fmt.Errorf("key log: %w", err)
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("key log %s is not a regular file (%v)", k.path, st.Mode().Type())
	}
	if err := syscall.Flock(int(k.f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("key log %s: lock: %w", k.path, err)
	}
	// Explicitly: the umask may have left less, an existing file more.
	if st.Mode().Perm() != 0o600 {
		if err := k.f.Chmod(0o600); err != nil {
			return fmt.Errorf("key log: %w", err)
		}
	}
	uid, gid, err := owner(st)
	if err != nil {
		return fmt.Errorf("key log %s: %w", k.path, err)
	}
	if uid != j.uid || gid != j.gid {
		// The group does not matter for mode 0600: a chown that only a
		// root could do is needed only when the owner is another user.
		if err := k.f.Chown(int(j.uid), int(j.gid)); err != nil && uid != j.uid {
			return fmt.Errorf("key log %s: give it to the JVM's user (uid %d; run as root or as that user): %w", k.path, j.uid, err)
		}
	}
	return nil
}

// abandon closes the key log, and removes it if openKeyLog created it and
// it is still empty: a failed Attach leaves nothing behind.
func (k *keyLog) abandon() {
	if k.created {
		if st, err := k.f.Stat(); err == nil && st.Size() == 0 {
			os.Remove(k.path)
		}
	}
	k.f.Close()
}

// Close releases the lock and closes the file.
func (k *keyLog) Close() error { return k.f.Close() }

// marker is the start of the comment line that says the agent was loaded
// into the JVM pid that started at start (clock ticks after boot) to log
// here. Key log readers (tlskeys, Wireshark) skip "#" lines.
func marker(pid int, start uint64) string {
	return fmt.Sprintf("# kscope keylogagent: pid %d start %d:", pid, start)
}

// mark appends the marker line for the JVM.
func (k *keyLog) mark(j *jvm, jar string) error {
	line := fmt.Sprintf("%s extract-tls-secrets loaded %s from %s\n", marker(j.pid, j.start), time.Now().UTC().Format(time.RFC3339), jar)
	if _, err := k.f.WriteString(line); err != nil {
		return fmt.Errorf("key log %s: %w", k.path, err)
	}
	return nil
}

// marked reports whether the key log has the JVM's marker line.
func (k *keyLog) marked(j *jvm) (bool, error) {
	if _, err := k.f.Seek(0, io.SeekStart); err != nil {
		return false, fmt.Errorf("key log %s: %w", k.path, err)
	}
	return hasLine(k.f, []byte(marker(j.pid, j.start)))
}

// hasLine reports whether r has a line that starts with prefix. Lines of
// any length are read (a key log is untrusted input).
func hasLine(r io.Reader, prefix []byte) (bool, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	start := true // at the start of a line
	for {
		b, err := br.ReadSlice('\n')
		if start && bytes.HasPrefix(b, prefix) {
			return true, nil
		}
		start = len(b) > 0 && b[len(b)-1] == '\n'
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case err == io.EOF:
			return false, nil
		default:
			return false, err
		}
	}
}
