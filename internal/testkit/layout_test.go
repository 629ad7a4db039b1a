package testkit

import (
	"os/exec"
	"strings"
	"testing"
)

// TestProductImportsNoTestkit: nothing the kscope binary is built from
// imports a test-only package.
func TestProductImportsNoTestkit(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kscope-dev/kscope/cmd/kscope").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 20 {
		t.Fatalf("go list gave %d packages: %q", len(deps), deps)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/kscope-dev/kscope/internal/testkit") {
			t.Errorf("the kscope binary imports %s", p)
		}
	}
}
