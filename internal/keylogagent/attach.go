package keylogagent

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/kscope-dev/kscope/internal/jfr"
)

// Attach loads the extract-tls-secrets agent (EnsureJar) into the running
// JVM pid, so that it appends the secrets of every TLS handshake from now
// on to the key log at keylogPath; it returns once the agent is in place.
//
// The key log is created if missing and appended to if not; either way it
// ends up mode 0600 and owned by the JVM's uid and gid (a symbolic link
// there is refused). The JVM must see the same file at the same path (its
// mount namespace is checked) and be able to reach it. The path may not
// contain spaces or quotes (jcmd passes its arguments as one
// space-separated line). The agent jar is copied next to the key log when
// the JVM cannot read it where it is.
//
// Attach loads the agent at most once per JVM (package doc): when the JVM
// has it already, Attach returns nil if it logs to this key log, else an
// error that wraps ErrAlreadyLoaded.
//
// jcmd must be able to reach the JVM: run as the JVM's user or as root,
// without -XX:+DisableAttachMechanism, and on JDK 21+ without
// -XX:-EnableDynamicAgentLoading.
func Attach(ctx context.Context, pid int, keylogPath string) error {
	if pid <= 0 {
		return fmt.Errorf("keylogagent: bad pid %d", pid)
	}
	path, err := filepath.Abs(keylogPath)
	if err != nil {
		return fmt.Errorf("keylogagent: %w", err)
	}
	if strings.ContainsAny(path, " \t\n\r\"'") {
		return fmt.Errorf("keylogagent: key log path %q has a space or quote, which jcmd cannot pass", path)
	}
	j, err := readJVM(pid)
	if err != nil {
		return fmt.Errorf("keylogagent: %w", err)
	}
	jar, err := EnsureJar(ctx)
	if err != nil {
		return err
	}
	kl, err := openKeyLog(path, j)
	if err != nil {
		return fmt.Errorf("keylogagent: attach to pid %d: %w", pid, err)
	}
	loaded, err := attach(ctx, j, jar, kl)
	if err != nil {
		if !loaded {
			kl.abandon()
		} else {
			kl.Close()
		}
		return fmt.Errorf("keylogagent: attach to pid %d: %w", pid, err)
	}
	if err := kl.Close(); err != nil {
		return fmt.Errorf("keylogagent: key log %s: %w", path, err)
	}
	return nil
}

// attach is Attach once the key log is open and locked. loaded says
// whether the agent is loaded into the JVM when it returns, logging here.
func attach(ctx context.Context, j *jvm, jar string, kl *keyLog) (loaded bool, err error) {
	if err := j.sees(kl.path); err != nil {
		return false, err
	}
	if err := j.may(kl.path, mayWrite); err != nil {
		return false, err
	}
	open, err := j.agentOpen(jar)
	if err != nil {
		return false, err
	}
	if open != "" {
		return alreadyLoaded(j, kl, open)
	}
	jvmJar, err := jarFor(j, jar, filepath.Dir(kl.path))
	if err != nil {
		return false, err
	}
	out, err := jfr.Jcmd(ctx, j.pid, "JVMTI.agent_load", jvmJar, kl.path)
	if err != nil {
		return false, fmt.Errorf("load agent: %w", err)
	}
	if err := loadResult(out); err != nil {
		return false, fmt.Errorf("load agent %s: %w", jvmJar, err)
	}
	if open, err := j.agentOpen(jvmJar); err != nil || open == "" {
		return false, fmt.Errorf("load agent %s: jcmd said return code 0, but the JVM has no agent jar open (%v)", jvmJar, err)
	}
	return true, kl.mark(j, jvmJar)
}

// alreadyLoaded decides what an Attach to a JVM that has the agent (jar
// open at open) does: nothing if the agent logs to this key log as far as
// can be told, else fail with ErrAlreadyLoaded.
func alreadyLoaded(j *jvm, kl *keyLog, open string) (bool, error) {
	ok, err := kl.marked(j)
	if err != nil {
		return false, err
	}
	if ok {
		return true, nil
	}
	if p, ok := j.javaagentKeylog(); ok {
		if p == kl.path {
			return true, nil
		}
		return false, fmt.Errorf("%w (%s, -javaagent logging to %s)", ErrAlreadyLoaded, open, p)
	}
	return false, fmt.Errorf("%w (%s; its \"Logging to\" line on the JVM's stderr names the file; a restart of the JVM allows another)", ErrAlreadyLoaded, open)
}

// returnCode is the last line of jcmd's output for JVMTI.agent_load.
var returnCode = regexp.MustCompile(`(?m)^return code: (-?[0-9]+)\s*$`)

// loadResult reads jcmd's output for JVMTI.agent_load, which is "return
// code: N" (0: agentmain returned) or a message when the command itself
// was refused. The codes are JPLIS's (java.instrument's
// InvocationAdapter.c).
func loadResult(out string) error {
	m := returnCode.FindStringSubmatch(out)
	if m == nil {
		msg := jfr.JcmdMessage(out)
		if strings.Contains(msg, "Unknown diagnostic command") {
			msg += " (JDK 8 has no JVMTI.agent_load: java -jar " + JarName + " PID KEYLOG attaches there)"
		}
		return fmt.Errorf("%s", msg)
	}
	why := map[string]string{
		"0":   "",
		"100": ": the JVM could not open the jar or it has no Agent-Class",
		"101": ": the JVM could not add the jar to its class path",
		"102": ": the agent's agentmain failed or is missing",
	}
	w, known := why[m[1]]
	switch {
	case m[1] == "0":
		return nil
	case !known:
		w = ": the JVM could not load it as a Java agent"
	}
	return fmt.Errorf("return code %s%s (the JVM's stderr says more)", m[1], w)
}
