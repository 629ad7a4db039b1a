package fsbench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestCleanupFiles: what a killed run left as files (an image the state
// file lists, whatever is in the run dir, the state file) is removed and
// reported; an image listed outside the work dir is left alone; a state
// file that does not parse is reported and the dir is swept anyway.
func TestCleanupFiles(t *testing.T) {
	for _, c := range []struct {
		name      string
		state     string // "": from the resources below
		wantPID   int
		wantErr   string
		wantFiles []string // relative to the work dir
	}{
		{name: "listed", wantPID: 4242, wantFiles: []string{"run/x-1.img", "run/broker-x-1"}},
		{name: "damaged state file", state: "{not json", wantErr: "ignored: looking under the dir instead", wantFiles: []string{"run/broker-x-1", "run/x-1.img"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			outside := filepath.Join(t.TempDir(), "other.img")
			img := filepath.Join(dir, runDir, "x-1.img")
			for _, p := range []string{img, outside, filepath.Join(dir, runDir, "broker-x-1", "server.properties")} {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			b := []byte(c.state)
			if c.state == "" {
				var err error
				b, err = json.Marshal(state{PID: 4242, Resources: []*item{{Kind: kindImage, Path: img}, {Kind: kindImage, Path: outside}}})
				if err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(dir, stateFile), b, 0o600); err != nil {
				t.Fatal(err)
			}
			left, err := Cleanup(dir)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Fatalf("err = %v, want %q", err, c.wantErr)
			}
			if left.PID != c.wantPID {
				t.Errorf("pid %d, want %d", left.PID, c.wantPID)
			}
			var want []string
			for _, f := range c.wantFiles {
				want = append(want, filepath.Join(dir, f))
			}
			if !slices.Equal(left.Files, want) {
				t.Errorf("files %q, want %q", left.Files, want)
			}
			entries, _ := os.ReadDir(filepath.Join(dir, runDir))
			if _, serr := os.Stat(filepath.Join(dir, stateFile)); len(entries) > 0 || !os.IsNotExist(serr) {
				t.Errorf("left in the work dir: %d entries in the run dir, state file: %v", len(entries), serr)
			}
			if _, err := os.Stat(outside); err != nil {
				t.Errorf("the image outside the work dir was touched: %v", err)
			}
		})
	}
}
