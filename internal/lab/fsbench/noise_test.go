package fsbench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestParseNoise: the fsync writer and the dirty writer, alone or
// together, with their sizes; bad names, sizes and repeats refused.
func TestParseNoise(t *testing.T) {
	good := []struct {
		spec         string
		kind         string
		bytes        int
		dirtyPerSec  int64
		descriptions []string
	}{
		{"fsync-writer", "fsync-writer", 256 << 10, 0, []string{"fsync-writer (256 KiB per fsync)"}},
		{"fsync-writer:1MiB", "fsync-writer", 1 << 20, 0, nil},
		{"dirty-writer", "dirty-writer", 0, 32 << 20, []string{"dirty-writer (32 MiB/s to writeback)"}},
		{"dirty-writer:128MiB", "dirty-writer", 0, 128 << 20, nil},
		{"fsync-writer, dirty-writer:8MiB", "fsync-writer+dirty-writer", 256 << 10, 8 << 20, []string{"fsync-writer", " and dirty-writer (8 MiB/s"}},
	}
	for _, c := range good {
		n, err := ParseNoise(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		if n.Kind != c.kind || n.Bytes != c.bytes || n.DirtyBytesPerSec != c.dirtyPerSec {
			t.Errorf("%q: %+v", c.spec, n)
		}
		for _, d := range c.descriptions {
			if !strings.Contains(n.describe(), d) {
				t.Errorf("%q: describe %q lacks %q", c.spec, n.describe(), d)
			}
		}
	}
	for _, bad := range []string{"fsync", "fsync-writer:1", "fsync-writer:1GiB", "dirty-writer:512KiB", "dirty-writer:1GiB",
		"dirty-writer:x", "dirty-writer,dirty-writer", "fsync-writer,fsync-writer:8KiB", "fsync-writer,", "dirty-writer:-1"} {
		if _, err := ParseNoise(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	for _, none := range []string{"", "none", "  "} {
		if n, err := ParseNoise(none); n != nil || err != nil {
			t.Errorf("%q: %v %v", none, n, err)
		}
	}
}

// TestNoiseWriters: the writers run on a directory, the dirty writer
// keeps to its rate and its file bound, what they do in the window is
// counted, and stop leaves no file behind; a file already there is not
// written over.
func TestNoiseWriters(t *testing.T) {
	cases := []struct {
		name       string
		noise      Noise
		wantFsync  bool
		wantDirty  bool
		maxDirtyMB float64
	}{
		{"fsync writer", Noise{Kind: "fsync-writer", Bytes: 4096}, true, false, 0},
		{"dirty writer", Noise{Kind: "dirty-writer", DirtyBytesPerSec: 4 << 20}, false, true, 4 * 0.6},
		{"both", Noise{Kind: "fsync-writer+dirty-writer", Bytes: 4096, DirtyBytesPerSec: 2 << 20}, true, true, 2 * 0.6},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			win := &window{}
			win.set(time.Now(), time.Minute)
			st, stop, err := startNoise(context.Background(), &c.noise, dir, win)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(450 * time.Millisecond)
			stop()
			if st.err != nil {
				t.Fatal(st.err)
			}
			if got := st.fsyncs.TotalCount() > 0; got != c.wantFsync {
				t.Errorf("fsyncs %d, want some: %v", st.fsyncs.TotalCount(), c.wantFsync)
			}
			if got := st.dirtyBytes > 0; got != c.wantDirty {
				t.Errorf("dirty bytes %d, want some: %v", st.dirtyBytes, c.wantDirty)
			}
			// 450 ms at the rate, in 100 ms ticks: at most 5 ticks' worth.
			if mb := float64(st.dirtyBytes) / (1 << 20); mb > c.maxDirtyMB {
				t.Errorf("dirtied %.1f MiB in 450 ms, more than the rate allows (%.1f)", mb, c.maxDirtyMB)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, "*")); len(left) != 0 {
				t.Errorf("left behind: %v", left)
			}
		})
	}
	t.Run("existing file", func(t *testing.T) {
		dir := t.TempDir()
		theirs := filepath.Join(dir, "kscope-dirty.dat")
		if err := os.WriteFile(theirs, []byte("not ours"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := startNoise(context.Background(), &Noise{DirtyBytesPerSec: 1 << 20}, dir, &window{}); err == nil {
			t.Fatal("wrote over a file it did not create")
		}
		if b, _ := os.ReadFile(theirs); string(b) != "not ours" {
			t.Errorf("file changed: %q", b)
		}
	})
}

// FuzzParseNoise: no --noise spec panics, and what is taken is within
// the writers' bounds.
func FuzzParseNoise(f *testing.F) {
	for _, s := range []string{"fsync-writer", "fsync-writer:1MiB", "dirty-writer:64MiB", "fsync-writer,dirty-writer", "dirty-writer:1GiB", "none", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		n, err := ParseNoise(spec)
		if err != nil || n == nil {
			return
		}
		if n.Bytes != 0 && (n.Bytes < fsyncBytesMin || n.Bytes > fsyncBytesMax) ||
			n.DirtyBytesPerSec != 0 && (n.DirtyBytesPerSec < dirtyRateMin || n.DirtyBytesPerSec > dirtyRateMax) ||
			n.Bytes == 0 && n.DirtyBytesPerSec == 0 {
			t.Fatalf("%q: %+v", spec, n)
		}
	})
}
