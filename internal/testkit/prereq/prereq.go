// Package prereq is how a kscope test says that something it needs from
// the machine is missing: skip it, or fail it under CI=true, where CI can
// never pass by skipping. It imports nothing of kscope, so that the
// tests of packages testkit/labtest is built on (lab, slowdisk) can use
// it too; labtest.Unavailable is this with its own prefix.
package prereq

import (
	"os"
	"testing"
)

// InCI reports whether missing prerequisites must fail the test.
func InCI() bool { return os.Getenv("CI") == "true" }

// Unavailable skips t because a prerequisite is missing, or fails it
// under CI=true.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf(format+" (CI=true: prerequisites are mandatory; run scripts/setup.sh)", args...)
	}
	t.Skipf(format+" (run scripts/setup.sh)", args...)
}
