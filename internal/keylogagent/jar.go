package keylogagent

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kscope-dev/kscope/internal/checkout"
)

// jarScript fetches the jar (scripts/setup.sh runs it too).
const jarScript = "keylog-agent-jar.sh"

// JarPath returns where the agent jar is: $KSCOPE_KEYLOG_AGENT_JAR, else
// $HOME/.cache/kscope/extract-tls-secrets-4.0.0.jar. It may not exist yet.
func JarPath() (string, error) {
	if p := os.Getenv(JarEnv); p != "" {
		if !filepath.IsAbs(p) {
			return "", fmt.Errorf("keylogagent: %s must be an absolute path, not %q", JarEnv, p)
		}
		return p, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("keylogagent: agent jar: %w", err)
	}
	return filepath.Join(home, ".cache", "kscope", JarName), nil
}

// EnsureJar returns the path of the agent jar, fetching it when it is
// missing (or, at the default path, does not have JarSHA1): it runs
// scripts/keylog-agent-jar.sh of the kscope checkout that the working dir
// or the executable is in, which resolves Artifact with mvn (from ~/.m2
// when it is there, else Maven Central) and checks its sha1. Without a
// checkout, the jar must be there already.
func EnsureJar(ctx context.Context) (string, error) {
	jar, err := JarPath()
	if err != nil {
		return "", err
	}
	if err := usable(jar); err == nil {
		return jar, nil
	}
	script, err := checkout.FindScript(jarScript)
	if err != nil {
		return "", fmt.Errorf("keylogagent: agent jar %s missing, and %w (or fetch it: mvn dependency:copy -Dartifact=%s -DoutputDirectory=DIR, and set %s)", jar, err, Artifact, JarEnv)
	}
	cmd := exec.CommandContext(ctx, "bash", script)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("keylogagent: %s: %w: %s", script, err, checkout.LastLines(stderr.String(), 10))
	}
	if got := strings.TrimSpace(stdout.String()); got != jar {
		return "", fmt.Errorf("keylogagent: %s printed %q, not %s", script, got, jar)
	}
	if err := usable(jar); err != nil {
		return "", fmt.Errorf("keylogagent: after %s: %w", script, err)
	}
	return jar, nil
}

// usable checks the jar at path: a regular file, and with JarSHA1 unless
// JarEnv chose it.
func usable(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("agent jar %s is not a regular file", path)
	}
	if os.Getenv(JarEnv) != "" {
		return nil
	}
	sum, err := fileSHA1(path)
	if err != nil {
		return err
	}
	if sum != JarSHA1 {
		return fmt.Errorf("agent jar %s has sha1 %s, not %s", path, sum, JarSHA1)
	}
	return nil
}

// fileSHA1 is the hex sha1 of the file at path.
func fileSHA1(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha1.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
