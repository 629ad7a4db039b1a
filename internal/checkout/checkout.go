// Package checkout finds the scripts of the kscope checkout that the
// product runs to fetch what it needs (the Kafka jars, the TLS key-log
// agent), and trims their output for errors. It is apart from internal/lab
// so that a production path (the agent's TLS keys) does not import the lab.
package checkout

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// FindScript locates scripts/NAME of the kscope checkout that the working
// dir, or else the running executable, is in.
func FindScript(name string) (string, error) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	for _, dir := range starts {
		for {
			script := filepath.Join(dir, "scripts", name)
			if isFile(script) && isFile(filepath.Join(dir, "go.mod")) {
				return script, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	return "", fmt.Errorf("scripts/%s not found (run from a kscope checkout)", name)
}

// LastLines trims s to its last n lines (a failing tool's output is long;
// the reason is at the end).
func LastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}
