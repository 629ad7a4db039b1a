package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"testing"

	"github.com/kscope-dev/kscope/internal/releases/protodef"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// TestCommittedTableIsGenerated: the committed table_gen.go is byte for
// byte what `go generate` writes from the jars, so nobody edited it by hand
// and nobody forgot to regenerate after changing releases.txt or gen.
func TestCommittedTableIsGenerated(t *testing.T) {
	dir, err := protodef.CacheDir()
	if err != nil {
		t.Fatal(err)
	}
	releases, err := readReleases("../releases.txt", dir)
	if errors.Is(err, fs.ErrNotExist) {
		labtest.Unavailable(t, "%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(releases)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("internal/releases/table_gen.go is not what the generator writes from the jars: run go generate ./internal/releases")
	}
}
