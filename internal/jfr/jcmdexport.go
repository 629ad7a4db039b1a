package jfr

import "context"

// Jcmd runs `jcmd PID ARGS...` (the jcmd next to $JAVA_HOME/bin/java, else
// the one on PATH) and returns what it printed, for other packages that
// drive a JVM with jcmd (internal/jvmlog turns unified logging on and
// off). jcmd exits 0 when the command itself fails and prints why, so the
// caller must look for the command's own success message; an error here
// means jcmd was not found, could not reach the JVM, or ctx ended.
func Jcmd(ctx context.Context, pid int, args ...string) (string, error) {
	return jcmd(ctx, pid, args...)
}

// JcmdMessage is the gist of jcmd's output on one line, fit for an error
// message: without the "PID:" line jcmd starts with, and for an exception
// only its first line.
func JcmdMessage(out string) string { return message(out) }
