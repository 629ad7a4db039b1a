package iotrace

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestFileResolver names files of this process by (device, inode): from
// the call's fd, from the open files, from the log directory, a file new
// to it at once; and does not look again for a file looked for everywhere
// for missRetry, however often it is asked.
func TestFileResolver(t *testing.T) {
	dir := t.TempDir()
	part := filepath.Join(dir, "topic-0")
	if err := os.Mkdir(part, 0o755); err != nil {
		t.Fatal(err)
	}
	create := func(name string) (string, fileID) {
		path := filepath.Join(part, name)
		return path, writeFile(t, path)
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
	steps := []struct {
		name string
		id   fileID
		fd   int
		want string
	}{
		{"by its fd", openID, int(f.Fd()), openPath},
		{"open, fd unknown", openID, -1, openPath},
		{"closed: from the walk", closedID, -1, closedPath},
		{"unknown", unknown, -1, ""},
	}
	for _, st := range steps {
		got, ok := r.lookup(st.id, st.fd)
		if got != st.want || ok != (st.want != "") {
			t.Errorf("%s: %q %v, want %q", st.name, got, ok, st.want)
		}
	}
	// A file created since, new to the resolver: looked for at once.
	laterPath, laterID := create("00000000000000000001.log")
	if got, ok := r.lookup(laterID, -1); !ok || got != laterPath {
		t.Errorf("a file created after a walk: %q %v, want %q", got, ok, laterPath)
	}
	// The unknown file is not looked for again within missRetry: no walk
	// (which would name the closed file again, forgotten here).
	if _, missed := r.misses[unknown]; !missed {
		t.Fatal("the unknown file is not remembered as missed")
	}
	delete(r.names, closedID)
	if _, ok := r.lookup(unknown, -1); ok {
		t.Error("the unknown file was named")
	}
	if _, ok := r.names[closedID]; ok {
		t.Error("a lookup of a missed file within missRetry walked the log directories")
	}
	// After missRetry it is looked for again; names unseen for
	// forgetAfter are forgotten then.
	r.misses[unknown] = time.Now().Add(-missRetry)
	r.names[fileID{dev: 1, ino: 2}] = namedFile{"/gone", time.Now().Add(-forgetAfter)}
	r.lookup(unknown, -1)
	if at := r.misses[unknown]; time.Since(at) > time.Minute/2 {
		t.Error("a missed file was not looked for again after missRetry")
	}
	if _, ok := r.names[fileID{dev: 1, ino: 2}]; ok {
		t.Error("a name unseen for forgetAfter is still kept")
	}

	// A checkpoint at the top of the log directory, written and closed
	// (as the broker does, to a temporary file it renames): named from
	// the top level alone, without listing the open files or walking the
	// partition directories.
	ckPath := filepath.Join(dir, "replication-offset-checkpoint")
	ckID := writeFile(t, ckPath)
	top := newFileResolver(os.Getpid(), []string{dir})
	if got, ok := top.lookup(ckID, -1); !ok || got != ckPath {
		t.Errorf("a checkpoint at the top: %q %v, want %q", got, ok, ckPath)
	}
	for _, id := range []fileID{openID, closedID} {
		if n, ok := top.names[id]; ok {
			t.Errorf("naming a file at the top also named %s: the open files or the partitions were looked through", n.path)
		}
	}
}

// TestFsyncNamedOnlyForTheBroker: an ext4 fsync by the broker of a file
// the resolver has not seen is named (here from the walk, the file being
// closed); the same fsync by another process is named only from what the
// resolver already knows, without listing fds or walking the log
// directories, which it would otherwise do for every new file of every
// process fsyncing on the device.
func TestFsyncNamedOnlyForTheBroker(t *testing.T) {
	dir := t.TempDir()
	part := filepath.Join(dir, "synced-2")
	if err := os.Mkdir(part, 0o755); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(part, "00000000000000000000.log")
	id := writeFile(t, seg)
	fsync := func(pid int) iojournalIojournalEvent {
		return iojournalIojournalEvent{StartNs: 1, EndNs: 2, Id: id.ino, Dev: id.dev, Kind: uint32(KindExt4Fsync),
			Pid: uint32(pid), Tid: uint32(pid)}
	}
	for _, tc := range []struct {
		name     string
		pid      int
		known    bool // the resolver named the file before
		wantFile string
	}{
		{"broker, new file", os.Getpid(), false, "synced-2/00000000000000000000.log"},
		{"other process, new file", os.Getpid() + 1, false, ""},
		{"other process, known file", os.Getpid() + 1, true, "synced-2/00000000000000000000.log"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &Tracer{cfg: Config{PID: os.Getpid(), LogDirs: []string{dir}}, files: newFileResolver(os.Getpid(), []string{dir})}
			if tc.known {
				tr.files.names[id] = namedFile{seg, time.Now()}
			}
			ev := fsync(tc.pid)
			got, err := tr.convertJournal(&ev)
			if err != nil {
				t.Fatal(err)
			}
			s := got.(*event.FileSync)
			if s.File != tc.wantFile {
				t.Errorf("file %q, want %q", s.File, tc.wantFile)
			}
			if walked := len(tr.files.names) > 1 || len(tr.files.misses) > 0; walked && tc.pid != os.Getpid() {
				t.Errorf("another process's fsync was looked for: names %v, misses %v", tr.files.names, tr.files.misses)
			}
		})
	}
}

// writeFile creates a small file at path and returns its identity.
func writeFile(t *testing.T, path string) fileID {
	t.Helper()
	if err := os.WriteFile(path, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	return statID(&st)
}
