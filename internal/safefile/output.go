package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// ErrRefused is wrapped by every refusal to write to a path.
var ErrRefused = errors.New("refusing to write")

// Target says where an output goes and what it must not touch.
type Target struct {
	// Path is the path the user gave.
	Path string
	// DefaultName, if set, makes a directory Path mean "into the
	// directory, under this name"; without it a directory is refused.
	DefaultName string
	// Inputs are the run's inputs (files or directories, such as a
	// recording): the output may be none of them nor inside any of the
	// directories.
	Inputs []string
}

// Resolve returns the path the output will be written to: Path, followed
// through symbolic links, or DefaultName inside it when it is a directory.
// It refuses, with an error wrapping ErrRefused, a path that exists and is
// not a regular file (a device, a FIFO, a socket, a symlink to one), a
// dangling symlink, a directory without DefaultName, a missing parent
// directory, and any input of the run or anything inside an input
// directory.
func (t Target) Resolve() (string, error) {
	if t.Path == "" {
		return "", fmt.Errorf("%w: no output path", ErrRefused)
	}
	path := t.Path
	st, err := os.Lstat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return "", err
	case st.Mode()&os.ModeSymlink != 0:
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", fmt.Errorf("%w to %s: a symbolic link to a missing path", ErrRefused, path)
		}
		path = real
		if st, err = os.Stat(path); err != nil {
			return "", err
		}
	}
	if st != nil && st.IsDir() {
		if t.DefaultName == "" {
			return "", fmt.Errorf("%w to %s: a directory (give a file name)", ErrRefused, t.Path)
		}
		path = filepath.Join(path, t.DefaultName)
		st, err = os.Lstat(path)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		if err != nil {
			st = nil
		}
	}
	if st != nil && !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w over %s: %s, not a regular file", ErrRefused, path, Describe(st.Mode()))
	}
	dir := filepath.Dir(path)
	if dst, err := os.Stat(dir); err != nil {
		return "", fmt.Errorf("%w to %s: %v", ErrRefused, path, err)
	} else if !dst.IsDir() {
		return "", fmt.Errorf("%w to %s: %s is not a directory", ErrRefused, path, dir)
	}
	if err := t.checkInputs(path, st); err != nil {
		return "", err
	}
	return path, nil
}

// Check is Resolve, and also makes sure a file can be created in the
// directory the output goes to (a read-only file system, a directory the
// user cannot write): a command calls it before a long run so that the
// run's result is not lost at the end. Write checks again.
func (t Target) Check() (string, error) {
	path, err := t.Resolve()
	if err != nil {
		return "", err
	}
	probe, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return "", fmt.Errorf("cannot write %s: %w", path, err)
	}
	probe.Close()
	os.Remove(probe.Name())
	return path, nil
}

// OutputDir refuses path as a directory kscope is to create or write
// into (a recording) when it exists and is not a directory: a regular
// file, a device, a FIFO, a socket, a symbolic link to one of them, or a
// dangling symbolic link. It opens nothing, so a FIFO cannot block it.
// Whether an existing directory may be used (empty or not) is the
// caller's rule.
func OutputDir(path string) error {
	if path == "" {
		return fmt.Errorf("%w: no output directory", ErrRefused)
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		if lst, lerr := os.Lstat(path); lerr == nil && lst.Mode()&os.ModeSymlink != 0 {
			return fmt.Errorf("%w to %s: a symbolic link to a missing path", ErrRefused, path)
		}
		return nil
	case err != nil:
		return err
	case !st.IsDir():
		return fmt.Errorf("%w into %s: %s, not a directory", ErrRefused, path, Describe(st.Mode()))
	}
	return nil
}

// checkInputs refuses an output that is one of the inputs (by inode, so a
// hard link or another spelling of the path is caught too) or lies inside
// an input directory.
func (t Target) checkInputs(path string, st os.FileInfo) error {
	absOut, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	realDir, err := filepath.EvalSymlinks(filepath.Dir(absOut))
	if err == nil {
		absOut = filepath.Join(realDir, filepath.Base(absOut))
	}
	for _, in := range t.Inputs {
		ist, err := os.Stat(in)
		if err != nil {
			continue // a missing input fails where it is read
		}
		if st != nil && os.SameFile(st, ist) {
			return fmt.Errorf("%w over %s: it is an input of this run", ErrRefused, path)
		}
		if !ist.IsDir() {
			continue
		}
		absIn, err := filepath.Abs(in)
		if err != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(absIn); err == nil {
			absIn = real
		}
		if rel, err := filepath.Rel(absIn, absOut); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
			return fmt.Errorf("%w to %s: it is inside %s, an input of this run", ErrRefused, path, in)
		}
	}
	return nil
}

// Write resolves t and writes the output through write into a new
// temporary file beside it, renamed over the path only once write has
// succeeded: never a half-written file, never anything but a regular file
// replaced. It returns the path written.
func Write(t Target, write func(io.Writer) error) (string, error) {
	path, err := t.Resolve()
	if err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return "", err
	}
	// On disk before the rename: after a crash the path holds the old
	// output or the new one, never an empty file (XFS, or ext4 without
	// auto_da_alloc, may journal the rename before the data).
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	// The path may have become something else while we wrote.
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w over %s: %s, not a regular file", ErrRefused, path, Describe(st.Mode()))
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", err
	}
	return path, nil
}
