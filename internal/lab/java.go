package lab

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"

	"github.com/kscope-dev/kscope/internal/hostinfo"
)

// JavaPath returns the java binary: $JAVA_HOME/bin/java when it exists,
// else java on PATH.
func JavaPath() (string, error) {
	p, err := hostinfo.JDKTool("java")
	if err != nil {
		return "", fmt.Errorf("lab: %w", err)
	}
	return p, nil
}

// Classpath returns the classpath for a libs dir. The "*" is expanded by
// java itself (not a shell), so it is passed as one argument.
func Classpath(libs string) string {
	return filepath.Join(libs, "*")
}

// ToolJVMArgs are JVM flags for short-lived Kafka tools: a small heap (they
// run next to a broker on a 2-core machine), and C1-only JIT plus serial GC,
// which cut a tool's start-up by about a third.
func ToolJVMArgs() []string {
	return []string{"-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"}
}

// JavaCommand builds `java JVMARGS -cp LIBS/* MAINCLASS ARGS...`, killed
// when ctx is done. Used for one-shot tools (storage format, producer
// perf, console consumer), never for the broker, which must outlive ctx.
func JavaCommand(ctx context.Context, libs string, jvmArgs []string, mainClass string, args ...string) (*exec.Cmd, error) {
	java, err := JavaPath()
	if err != nil {
		return nil, err
	}
	if libs == "" {
		return nil, fmt.Errorf("lab: java %s: empty libs dir", mainClass)
	}
	argv := append([]string{}, jvmArgs...)
	argv = append(argv, "-cp", Classpath(libs), mainClass)
	argv = append(argv, args...)
	return exec.CommandContext(ctx, java, argv...), nil
}
