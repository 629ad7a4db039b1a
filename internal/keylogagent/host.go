package keylogagent

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// HostDir holds one key log per JVM the agent was loaded into by
// AttachHost, named PID-STARTTIME.log. The agent can be loaded into a JVM
// once and then writes to the same file until the JVM exits, so every
// kscope command that wants a broker's keys (each `record --tls-keys
// attach`, the agent) shares that JVM's file rather than asking for a
// second one. /run is a tmpfs: the keys are gone at the next boot, and a
// file whose JVM has exited is no longer written.
const HostDir = "/run/kscope/tls-keys"

// HostKeyLog is the key log AttachHost uses for the JVM pid.
func HostKeyLog(pid int) (string, error) {
	j, err := readJVM(pid)
	if err != nil {
		return "", fmt.Errorf("keylogagent: %w", err)
	}
	return filepath.Join(HostDir, fmt.Sprintf("%d-%d.log", pid, j.start)), nil
}

// EnsureHostDir makes HostDir: mode 0711 (the JVM's user may reach its
// own key log in it, nobody may list it; each key log is 0600).
func EnsureHostDir() error {
	if err := os.MkdirAll(HostDir, 0o711); err != nil {
		return fmt.Errorf("keylogagent: %w", err)
	}
	// MkdirAll leaves an existing dir's mode, and the umask narrows a
	// new one's: /run/kscope and HostDir must be 0711 for a JVM that
	// runs as another user.
	for _, d := range []string{filepath.Dir(HostDir), HostDir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("keylogagent: %w", err)
		}
	}
	return nil
}

// AttachHost loads the agent into the JVM pid, logging to its key log in
// HostDir, and returns that key log's path. Called again for the same JVM
// it does nothing more and returns the same path.
func AttachHost(ctx context.Context, pid int) (string, error) {
	if err := EnsureHostDir(); err != nil {
		return "", err
	}
	path, err := HostKeyLog(pid)
	if err != nil {
		return "", err
	}
	return path, Attach(ctx, pid, path)
}
