package segment

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestReadLeaderEpochCheckpoint(t *testing.T) {
	tests := []struct {
		name, text string
		n          int
		err        string
	}{
		{"one", "0\n1\n0 0\n", 1, ""},
		{"several", "0\n3\n0 0\n2 150\n5 150\n", 3, ""},
		{"none", "0\n0\n", 0, ""},
		{"empty", "", 0, "empty file"},
		{"version", "1\n0\n", 0, "version"},
		{"count", "0\nx\n", 0, "entry count"},
		{"short", "0\n2\n0 0\n", 0, "count line says 2"},
		{"long", "0\n1\n0 0\n1 5\n", 0, "unexpected"},
		{"epoch order", "0\n2\n3 0\n2 10\n", 0, "does not follow"},
		{"offset order", "0\n2\n1 10\n2 5\n", 0, "does not follow"},
		{"fields", "0\n1\n0 0 0\n", 0, "not \"epoch offset\""},
		{"negative", "0\n1\n-1 0\n", 0, "not \"epoch offset\""},
		{"huge count", "0\n99999999999\n0 0\n", 0, "count line says"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), LeaderEpochFile), []byte(tt.text))
			got, err := ReadLeaderEpochCheckpoint(path)
			if tt.err == "" {
				if err != nil || len(got) != tt.n {
					t.Fatalf("%v, %v; want %d entries", got, err, tt.n)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), path) {
				t.Fatalf("error %v, want %q", err, tt.err)
			}
		})
	}
}
