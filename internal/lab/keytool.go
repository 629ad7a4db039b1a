package lab

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kscope-dev/kscope/internal/hostinfo"
)

// keytool runs the JDK's keytool: the one next to the java the lab runs
// (JavaPath, symlinks followed), else the one JAVA_HOME or PATH has.
type keytool struct{ path string }

func newKeytool() (keytool, error) {
	if java, err := JavaPath(); err == nil {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			p := filepath.Join(filepath.Dir(real), "keytool")
			if st, err := os.Stat(p); err == nil && !st.IsDir() {
				return keytool{p}, nil
			}
		}
	}
	p, err := hostinfo.JDKTool("keytool")
	if err != nil {
		return keytool{}, fmt.Errorf("lab: %w", err)
	}
	return keytool{p}, nil
}

// run runs keytool with args. Passwords go in env (args name them with
// -storepass:env), so they are on no command line and in no error.
func (kt keytool) run(ctx context.Context, env map[string]string, args ...string) error {
	// keytool's own JVM: small and quick to start, as for Kafka's tools.
	argv := []string{"-J-Xmx64m", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"}
	cmd := exec.CommandContext(ctx, kt.path, append(argv, args...)...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("lab: keytool %s: %w: %s", args[0], err, strings.TrimSpace(string(out)))
	}
	return nil
}
