package segment

import (
	"os"
	"path/filepath"
	"testing"
)

// Real segments written by Kafka 4.1.2 in the acceptance test
// (internal/e2e): a transactional topic (lz4 batches, COMMIT and ABORT
// markers) and a zstd topic whose records carry message ids
// "seg-ids-zstd-<offset>" (16 batches, one .index entry).
const (
	txnDir = "../../testdata/segments/seg-txn-0"
	idsDir = "../../testdata/segments/seg-ids-zstd-0"
	seg0   = "00000000000000000000"
)

// copyPartition copies a testdata partition directory into a new temp
// dir under the same name and returns the copy's path.
func copyPartition(t *testing.T, dir string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	// CopyFS keeps modes; make the copy writable for damaging it.
	entries, _ := os.ReadDir(dst)
	for _, e := range entries {
		os.Chmod(filepath.Join(dst, e.Name()), 0o644)
	}
	return dst
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, path string, data []byte) string {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
