package vm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/kscope-dev/kscope/internal/checkout"
)

// EnsureKernel runs scripts/vm-kernel.sh of the kscope checkout (found by
// walking up from the working dir), which installs qemu and the tools Run
// uses when missing (as root) and fetches the kernel on its first run, and
// returns the kernel dir it prints: Config.KernelDir.
func EnsureKernel(ctx context.Context) (string, error) {
	script, err := checkout.FindScript("vm-kernel.sh")
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("vm: %s: %w: %s", script, err, checkout.LastLines(stderr.String(), 15))
	}
	dir := strings.TrimSpace(stdout.String())
	if _, err := os.Stat(filepath.Join(dir, ".kscope-complete")); err != nil {
		return "", fmt.Errorf("vm: %s printed %q, which is not a complete kernel dir", script, dir)
	}
	return dir, nil
}

// BuildInit builds the Go package pkg (a path or pattern as `go build`
// takes it, relative to the working dir) into the static binary out, for
// Config.Init.
func BuildInit(ctx context.Context, pkg, out string) error {
	gobin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("vm: build %s: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, gobin, "build", "-o", out, pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("vm: go build %s: %w: %s", pkg, err, strings.TrimSpace(string(b)))
	}
	return nil
}
