package iotrace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestFileResolver names files of this process by (device, inode): from
// the call's fd, from the open files, from the log directory; and looks
// through all files at most once per interval, however many unknown
// files it is asked about.
func TestFileResolver(t *testing.T) {
	dir := t.TempDir()
	part := filepath.Join(dir, "topic-0")
	if err := os.Mkdir(part, 0o755); err != nil {
		t.Fatal(err)
	}
	create := func(name string) (string, fileID) {
		path := filepath.Join(part, name)
		if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		var st unix.Stat_t
		if err := unix.Stat(path, &st); err != nil {
			t.Fatal(err)
		}
		return path, statID(&st)
	}
	openPath, openID := create("00000000000000000000.log")
	f, err := os.Open(openPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	closedPath, closedID := create("00000000000000000000.index")
	unknown := fileID{dev: openID.dev, ino: 1<<40 + 7}

	r := newFileResolver(os.Getpid(), []string{dir})
	r.scanEvery, r.walkEvery = time.Hour, time.Hour
	steps := []struct {
		name string
		id   fileID
		fd   int
		want string
	}{
		{"by its fd", openID, int(f.Fd()), openPath},
		{"open, fd unknown", openID, -1, openPath},
		{"closed: from the first walk", closedID, -1, closedPath},
		{"unknown", unknown, -1, ""},
	}
	for _, st := range steps {
		got, ok := r.lookup(st.id, st.fd)
		if got != st.want || ok != (st.want != "") {
			t.Errorf("%s: %q %v, want %q", st.name, got, ok, st.want)
		}
	}
	// A file created after the walk is not found before the next one.
	laterPath, laterID := create("00000000000000000001.log")
	walked := r.walked
	if got, ok := r.lookup(laterID, -1); ok {
		t.Errorf("a file created after the walk, within walkEvery: %q", got)
	}
	if r.walked != walked {
		t.Error("a second walk within walkEvery")
	}
	r.walkEvery = 0
	if got, ok := r.lookup(laterID, -1); !ok || got != laterPath {
		t.Errorf("after walkEvery: %q %v, want %q", got, ok, laterPath)
	}
	// A file looked for everywhere is not looked for again for missRetry,
	// even when walks are due.
	r.lookup(unknown, -1) // a walk is due: it looks everywhere
	if _, missed := r.misses[unknown]; !missed {
		t.Error("the unknown file is not remembered as missed")
	}
	walked = r.walked
	r.lookup(unknown, -1)
	if r.walked != walked {
		t.Error("the unknown file was looked for again within missRetry")
	}
	// Names not seen for forgetAfter are forgotten at a walk.
	r.names[unknown] = namedFile{"/gone", time.Now().Add(-forgetAfter)}
	r.lookup(fileID{dev: openID.dev, ino: 1<<40 + 8}, -1)
	if _, ok := r.names[unknown]; ok {
		t.Error("a name unseen for forgetAfter is still kept")
	}
}
