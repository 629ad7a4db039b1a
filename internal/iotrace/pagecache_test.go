package iotrace

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

func TestDecodePageCacheEvent(t *testing.T) {
	b := make([]byte, pageCacheEventSize)
	binary.LittleEndian.PutUint64(b[0:], 100)
	binary.LittleEndian.PutUint64(b[8:], 250)
	binary.LittleEndian.PutUint64(b[16:], 1234567)
	binary.LittleEndian.PutUint64(b[24:], 64)
	binary.LittleEndian.PutUint32(b[32:], 4242)
	binary.LittleEndian.PutUint32(b[36:], 8<<20|3)
	ev, ok := decodePageCacheEvent(b)
	if !ok || ev.StartNs != 100 || ev.EndNs != 250 || ev.Ino != 1234567 || ev.Pages != 64 || ev.Tid != 4242 || devString(ev.Dev) != "8:3" {
		t.Errorf("%+v %v", ev, ok)
	}
	if _, ok := decodePageCacheEvent(b[:20]); ok {
		t.Error("short sample accepted")
	}
}

// TestPageCacheAbsent: a kernel without the tracepoint (a tracefs
// without it), or with a layout this build does not know, is refused
// with a reason, which Open turns into Mode.PageCacheErr.
func TestPageCacheAbsent(t *testing.T) {
	events := t.TempDir()
	if _, err := openPageCache(events, os.Getpid(), 0); !errors.Is(err, errNoPageCacheTracepoint) {
		t.Errorf("no tracepoint: %v", err)
	}
	dir := filepath.Join(events, "filemap", "mm_filemap_add_to_page_cache")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	format := "format:\n\tfield:unsigned long i_ino;\toffset:8;\tsize:8;\tsigned:0;\n\tfield:dev_t s_dev;\toffset:32;\tsize:4;\tsigned:0;\n"
	if err := os.WriteFile(filepath.Join(dir, "format"), []byte(format), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := openPageCache(events, os.Getpid(), 0); err == nil || !strings.Contains(err.Error(), "field i_ino at offset 8") {
		t.Errorf("another layout: %v", err)
	}
	m := Mode{PageCacheErr: errNoPageCacheTracepoint}
	if s := m.String(); !strings.Contains(s, "page cache not traced: no tracepoint") {
		t.Errorf("mode %q", s)
	}
}

// TestPageCacheTraced: reading a file whose pages were dropped from the
// page cache adds them again, on the reading thread, as runs of the
// file's inode and device; reading it again while cached adds none.
func TestPageCacheTraced(t *testing.T) {
	requireRoot(t)
	// Written before the tracer starts: writing adds its pages too.
	path := filepath.Join(t.TempDir(), "cold")
	const size = 4 << 20
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{t.TempDir()}, PageCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !tr.Mode().PageCache {
		labtest.Unavailable(t, "page cache not traced: %v", tr.Mode().PageCacheErr)
	}
	var (
		mu   sync.Mutex
		runs []event.PageCacheAdds
	)
	var h Handlers
	event.PageCacheAddsKind.On(&h, func(p *event.PageCacheAdds) error {
		mu.Lock()
		defer mu.Unlock()
		runs = append(runs, *p)
		return nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	runErr := make(chan error, 1)
	go func() { runErr <- tr.RunAll(ctx, h) }()

	runtime.LockOSThread()
	tid := unix.Gettid()
	dropAndRead(t, path, true)
	dropAndRead(t, path, false) // cached now: no add
	runtime.UnlockOSThread()
	cancel()
	if err := <-runErr; err != nil {
		t.Fatal(err)
	}
	var pages int64
	for _, r := range runs {
		if r.TID == tid && r.Inode == st.Ino {
			pages += r.Pages
			if r.End.Before(r.Start) || r.Dev == "" {
				t.Errorf("run %+v", r)
			}
		}
	}
	stats, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d runs, %d pages of the file by the reader; stats: %d adds, %d runs, %d lost", len(runs), pages, stats.PageCacheAdds,
		stats.PageCacheEvents, stats.PageCacheRingbufDrops)
	if want := int64(size / os.Getpagesize()); pages != want {
		t.Errorf("%d pages of the file added by its reader, want %d", pages, want)
	}
}

// dropAndRead reads path whole, after dropping its pages from the page
// cache when drop is set.
func dropAndRead(t *testing.T, path string, drop bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if drop {
		if err := unix.Fsync(int(f.Fd())); err != nil {
			t.Fatal(err)
		}
		if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 1<<20)
	for {
		n, err := f.Read(buf)
		if n == 0 || err != nil {
			return
		}
	}
}
