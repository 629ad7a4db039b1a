package keylogagent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// Access bits, as in a file mode's rwx triplets.
const (
	mayExec  = 1
	mayWrite = 2
	mayRead  = 4
)

// sees checks that the JVM, in its own mount namespace, finds at path
// the same file as this process does.
func (j *jvm) sees(path string) error {
	ours, err := os.Stat(path)
	if err != nil {
		return err
	}
	theirs, err := os.Stat(j.proc("root") + path)
	if err != nil {
		return fmt.Errorf("the JVM (pid %d) cannot see %s in its mount namespace (a container, or systemd's PrivateTmp?): %w", j.pid, path, err)
	}
	if !os.SameFile(ours, theirs) {
		return fmt.Errorf("the JVM (pid %d) sees another file at %s: it runs in another mount namespace (a container, or systemd's PrivateTmp?); use a path bind-mounted at the same place on both sides", j.pid, path)
	}
	return nil
}

// may checks, by permission bits, that the JVM's user can open path for
// want (mayRead, mayWrite): search permission on every directory above it
// (symbolic links resolved) and want on the file. Root may do anything.
// ACLs and capabilities are not considered.
func (j *jvm) may(path string, want uint32) error {
	if j.uid == 0 {
		return nil
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	for dir := filepath.Dir(real); ; dir = filepath.Dir(dir) {
		st, err := os.Stat(dir)
		if err != nil {
			return err
		}
		if !j.allowed(st, mayExec) {
			return fmt.Errorf("the JVM (pid %d, uid %d) cannot search directory %s (mode %v)", j.pid, j.uid, dir, st.Mode().Perm())
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if !j.allowed(st, want) {
		what := "read"
		if want&mayWrite != 0 {
			what = "write"
		}
		return fmt.Errorf("the JVM (pid %d, uid %d) cannot %s %s (mode %v)", j.pid, j.uid, what, real, st.Mode().Perm())
	}
	return nil
}

// allowed applies the owner, group or other bits of st that apply to the
// JVM's user.
func (j *jvm) allowed(st fs.FileInfo, want uint32) bool {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	perm := uint32(st.Mode().Perm())
	switch {
	case sys.Uid == j.uid:
		perm >>= 6
	case sys.Gid == j.gid || slices.Contains(j.groups, sys.Gid):
		perm >>= 3
	}
	return perm&want == want
}

// owner returns the uid and gid of st.
func owner(st fs.FileInfo) (uid, gid uint32, err error) {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0, errors.New("no owner in file info")
	}
	return sys.Uid, sys.Gid, nil
}
