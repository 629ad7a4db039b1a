package logdir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

const (
	idA = "vB2yMUNNQ5-DWAWGUtKPDw"
	idB = "AAAAAAAAAAAAAAAAAAAAAQ"
	idC = "x7u1cBq8T3C5fF1p8H2fKg"
)

func mustID(t *testing.T, s string) [16]byte {
	t.Helper()
	id, ok := event.ParseTopicID(s)
	if !ok {
		t.Fatalf("bad test id %q", s)
	}
	return id
}

// writePartition creates logDir/name, with a partition.metadata holding
// metadata unless it is empty.
func writePartition(t *testing.T, logDir, name, metadata string) string {
	t.Helper()
	dir := filepath.Join(logDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if metadata != "" {
		if err := os.WriteFile(filepath.Join(dir, MetadataFile), []byte(metadata), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadPartitionMetadata(t *testing.T) {
	tests := []struct {
		name     string
		contents string
		want     string // topic id, or "" for an error
		errLike  string
	}{
		{"kafka", "version: 0\ntopic_id: " + idA + "\n", idA, ""},
		{"no final newline", "version: 0\ntopic_id: " + idA, idA, ""},
		{"crlf", "version: 0\r\ntopic_id: " + idA + "\r\n", idA, ""},
		{"several spaces", "version:  0\ntopic_id:\t" + idA + "\n", idA, ""},
		{"version 1", "version: 1\ntopic_id: " + idA + "\n", "", "unsupported version"},
		{"no space", "version:0\ntopic_id: " + idA + "\n", "", "is not"},
		{"wrong key", "version: 0\ntopic: " + idA + "\n", "", "is not \"topic_id\""},
		{"missing id", "version: 0\n", "", "1 lines"},
		{"extra line", "version: 0\ntopic_id: " + idA + "\nmore: 1\n", "", "3 lines"},
		{"bad base64", "version: 0\ntopic_id: not*base64\n", "", "URL-safe base64"},
		{"padded", "version: 0\ntopic_id: " + idA + "==\n", "", "URL-safe base64"},
		{"short id", "version: 0\ntopic_id: AAAA\n", "", "URL-safe base64"},
		{"zero id", "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", "", "all zeros"},
		{"empty", "", "", "1 lines"},
		{"too large", "version: 0\ntopic_id: " + idA + "\n" + strings.Repeat("#", 5000), "", "larger than 4096"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, MetadataFile), []byte(tt.contents), 0o644); err != nil {
				t.Fatal(err)
			}
			id, err := ReadPartitionMetadata(dir)
			if tt.want != "" {
				if err != nil || id != mustID(t, tt.want) {
					t.Fatalf("got %s, %v; want %s", event.TopicIDString(id), err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errLike) || !strings.Contains(err.Error(), MetadataFile) {
				t.Fatalf("error %v, want one naming the file and containing %q", err, tt.errLike)
			}
		})
	}
}

func TestReadPartitionMetadataFiles(t *testing.T) {
	t.Run("missing", func(t *testing.T) {
		if _, err := ReadPartitionMetadata(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("error %v, want fs.ErrNotExist", err)
		}
	})
	t.Run("directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, MetadataFile), 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadPartitionMetadata(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("fifo", func(t *testing.T) {
		dir := t.TempDir()
		if err := syscall.Mkfifo(filepath.Join(dir, MetadataFile), 0o644); err != nil {
			t.Fatal(err)
		}
		// Opening a FIFO with no writer would block forever.
		if _, err := ReadPartitionMetadata(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("error %v", err)
		}
	})
}

func TestTopicIDs(t *testing.T) {
	meta := func(id string) string { return "version: 0\ntopic_id: " + id + "\n" }
	long := strings.Repeat("t", 255-len("-0.0123456789abcdef0123456789abcdef-delete"))

	tests := []struct {
		name    string
		setup   func(t *testing.T, a, b string) // two log dirs
		want    map[string]string               // topic id -> topic
		errLike []string
	}{
		{"plain, several partitions and log dirs", func(t *testing.T, a, b string) {
			writePartition(t, a, "orders-0", meta(idA))
			writePartition(t, a, "orders-1", meta(idA))
			writePartition(t, b, "orders-2", meta(idA))
			writePartition(t, b, "my-topic.v2-0", meta(idB))
		}, map[string]string{idA: "orders", idB: "my-topic.v2"}, nil},
		{"not partitions", func(t *testing.T, a, b string) {
			writePartition(t, a, "orders-0", meta(idA))
			writePartition(t, a, "lost+found", "")
			writePartition(t, a, "remote-log-index-cache", meta(idB))
			for _, f := range []string{"meta.properties", "recovery-point-offset-checkpoint", "x-1"} {
				if err := os.WriteFile(filepath.Join(a, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}, map[string]string{idA: "orders"}, nil},
		{"no metadata file", func(t *testing.T, a, b string) {
			writePartition(t, a, "old-0", "")
			writePartition(t, a, "orders-0", meta(idA))
		}, map[string]string{idA: "orders"}, nil},
		{"special directories", func(t *testing.T, a, b string) {
			writePartition(t, a, "orders-0.0123456789abcdef0123456789abcdef-future", meta(idA))
			writePartition(t, a, "gone-0.0123456789abcdef0123456789abcdef-delete", meta(idB))
			writePartition(t, b, "stray-3.0123456789abcdef0123456789abcdef-stray", meta(idC))
		}, map[string]string{idA: "orders", idB: "gone", idC: "stray"}, nil},
		{"plain directories win over deleted ones", func(t *testing.T, a, b string) {
			writePartition(t, a, "aaa-0.0123456789abcdef0123456789abcdef-delete", meta(idA))
			writePartition(t, b, "orders-0", meta(idA))
		}, map[string]string{idA: "orders"}, nil},
		{"truncated topic skipped", func(t *testing.T, a, b string) {
			writePartition(t, a, long+"-0.0123456789abcdef0123456789abcdef-delete", meta(idA))
		}, map[string]string{}, nil},
		{"malformed metadata kept apart", func(t *testing.T, a, b string) {
			writePartition(t, a, "orders-0", meta(idA))
			writePartition(t, a, "broken-0", "version: 7\ntopic_id: "+idB+"\n")
		}, map[string]string{idA: "orders"}, []string{"broken-0", "unsupported version"}},
		{"one id for two topics", func(t *testing.T, a, b string) {
			writePartition(t, a, "orders-0", meta(idA))
			writePartition(t, b, "other-0", meta(idA))
		}, map[string]string{idA: "orders"}, []string{"recorded for both \"orders\" and \"other\""}},
		{"missing log dir", func(t *testing.T, a, b string) {
			writePartition(t, a, "orders-0", meta(idA))
			if err := os.RemoveAll(b); err != nil {
				t.Fatal(err)
			}
		}, map[string]string{idA: "orders"}, []string{"no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := t.TempDir(), t.TempDir()
			tt.setup(t, a, b)
			got, err := TopicIDs(a, b)
			want := make(map[[16]byte]string)
			for id, topic := range tt.want {
				want[mustID(t, id)] = topic
			}
			if len(got) != len(want) {
				t.Errorf("got %d ids, want %d: %v", len(got), len(want), got)
			}
			for id, topic := range want {
				if got[id] != topic {
					t.Errorf("id %s: got %q, want %q", event.TopicIDString(id), got[id], topic)
				}
			}
			if len(tt.errLike) == 0 {
				if err != nil {
					t.Errorf("error %v", err)
				}
				return
			}
			for _, s := range tt.errLike {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("error %v, want one containing %q", err, s)
				}
			}
		})
	}
}
