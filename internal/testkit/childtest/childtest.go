// Package childtest runs a test binary again as its own child process.
// A test that must kill or interrupt a process holding kernel state
// (mounts, loop devices, a FUSE server) starts itself with an
// environment variable that its TestMain turns into the child's job,
// and reads what the child prints.
package childtest

import (
	"bufio"
	"os"
	"os/exec"
	"testing"
)

// Child is the test binary running as a child.
type Child struct {
	Cmd *exec.Cmd
	// Lines are its standard output's lines after the first.
	Lines *bufio.Scanner
}

// Start runs the test binary with no tests of its own (-test.run=^$) and
// env (KEY=VALUE) added to its environment, and waits for the first line
// it prints, which it returns: "ready" or what the child's job says
// when set up. The test fails if the child cannot start or exits without
// a line; the child is killed when the test ends, if still running.
func Start(t testing.TB, env ...string) (*Child, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("child test binary: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		_ = cmd.Process.Kill()
		t.Fatalf("child test binary printed nothing: %v", lines.Err())
	}
	return &Child{Cmd: cmd, Lines: lines}, lines.Text()
}
