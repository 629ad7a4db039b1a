package keylogagent

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// jarFor returns a path at which the JVM can read the agent jar: jar
// itself when the JVM sees it and may read it, else a copy of it in dir
// (the key log's directory, which the JVM reaches: Attach checked),
// named as jar is. A copy already there is used when it is the same
// bytes, a regular file owned by this user or root, and not writable by
// others; else a new one replaces it (written aside, then renamed).
func jarFor(j *jvm, jar, dir string) (string, error) {
	if j.sees(jar) == nil && j.may(jar, mayRead) == nil {
		return jar, nil
	}
	src, err := os.ReadFile(jar)
	if err != nil {
		return "", fmt.Errorf("agent jar: %w", err)
	}
	dst := filepath.Join(dir, filepath.Base(jar))
	if trusted(dst, src) {
		return dst, nil
	}
	// The JVM loads code from the copy: nobody else may swap it.
	dirSt, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("agent jar: %w", err)
	}
	if m := dirSt.Mode(); m.Perm()&0o002 != 0 && m&os.ModeSticky == 0 {
		return "", fmt.Errorf("the JVM (pid %d) cannot read the agent jar %s, and the key log's directory %s is writable by anyone (mode %v), so no copy can be put there safely: choose another directory", j.pid, jar, dir, m.Perm())
	}
	tmp, err := os.CreateTemp(dir, ".kscope-agent-*.jar")
	if err != nil {
		return "", fmt.Errorf("copy agent jar: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename, nothing
	_, werr := tmp.Write(src)
	cerr := tmp.Chmod(0o644)
	if err := tmp.Close(); werr == nil && cerr == nil {
		werr = err
	}
	if werr != nil || cerr != nil {
		return "", fmt.Errorf("copy agent jar to %s: %v %v", dir, werr, cerr)
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return "", fmt.Errorf("copy agent jar: %w", err)
	}
	if err := j.sees(dst); err != nil {
		return "", err
	}
	if err := j.may(dst, mayRead); err != nil {
		return "", err
	}
	return dst, nil
}

// trusted reports whether the file at path is a copy of want that only
// this user or root can change.
func trusted(path string, want []byte) bool {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o022 != 0 {
		return false
	}
	uid, _, err := owner(st)
	if err != nil || uid != 0 && int(uid) != os.Geteuid() {
		return false
	}
	got, err := os.ReadFile(path)
	return err == nil && bytes.Equal(got, want)
}
