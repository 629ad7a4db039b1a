package segment

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kscope-dev/kscope/internal/safefile"
)

func TestVerifyRealPartitions(t *testing.T) {
	rep, err := Verify(txnDir, idsDir)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("problems: %v", rep.Problems)
	}
	if rep.Partitions != 2 || rep.LogFiles != 2 || rep.Batches != 28 || rep.IndexFiles != 4 || rep.IndexEntries != 4 {
		t.Fatalf("report %+v", rep)
	}
	// A log directory holding them.
	logDir := t.TempDir()
	for _, d := range []string{txnDir, idsDir} {
		if err := os.CopyFS(filepath.Join(logDir, filepath.Base(d)), os.DirFS(d)); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(logDir, "meta.properties"), []byte("version=1\n"))
	rep, err = Verify(logDir)
	if err != nil || !rep.OK() || rep.Partitions != 2 {
		t.Fatalf("log dir: %+v, %v", rep, err)
	}
	if _, err := Verify(t.TempDir()); err == nil {
		t.Fatal("an empty directory verified")
	}
}

// TestVerifyFindsDamage damages a copy of a real partition one way at a
// time and checks the problem is found, in the right file at the right
// position.
func TestVerifyFindsDamage(t *testing.T) {
	type damage func(t *testing.T, dir string)
	poke := func(file string, pos int, b ...byte) damage {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, file)
			data := readFile(t, p)
			copy(data[pos:], b)
			writeFile(t, p, data)
		}
	}
	write := func(file, text string) damage {
		return func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, file), []byte(text)) }
	}
	be32 := func(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
	tests := []struct {
		name   string
		dir    string
		damage damage
		file   string
		pos    int64
		match  string
	}{
		{"payload byte", txnDir, poke(seg0+".log", 700, 0x5a), seg0 + ".log", 652, "CRC mismatch"},
		{"length", txnDir, poke(seg0+".log", 652+8, 0x7f, 0xff, 0xff, 0xff), seg0 + ".log", 652, "exceeds the maximum batch size"},
		{"length over ten batches", txnDir, poke(seg0+".log", 574+8, be32(3735-574-12)...), seg0 + ".log", 574, "bad length: length 3149 runs over the valid batch at position 652"},
		{"index holding a segment", txnDir, func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, seg0+".index"), readFile(t, filepath.Join(dir, seg0+".log")))
		}, seg0 + ".index", -1, "named as an offset index but its bytes are a log segment"},
		{"segment holding a time index", txnDir, func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, seg0+".log"), readFile(t, filepath.Join(dir, seg0+".timeindex")))
		}, seg0 + ".log", -1, "named as a log segment but its bytes are a time index"},
		{"offset going back", txnDir, poke(seg0+".log", 652, 0, 0, 0, 0, 0, 0, 0, 3), seg0 + ".log", 652, "does not follow the previous batch's last offset 25"},
		{"index position", idsDir, poke(seg0+".index", 4, be32(4351)...), seg0 + ".index", 0, "not the start of a batch"},
		{"index offset", idsDir, poke(seg0+".index", 0, be32(2)...), seg0 + ".index", 0, "below the first offset"},
		{"index beyond the log", idsDir, poke(seg0+".index", 0, be32(4000)...), seg0 + ".index", 0, "beyond the segment's last offset"},
		{"index tail", idsDir, func(t *testing.T, dir string) {
			p := filepath.Join(dir, seg0+".index")
			writeFile(t, p, append(readFile(t, p), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1))
		}, seg0 + ".index", 16, "less than an entry"},
		{"timeindex timestamp", txnDir, poke(seg0+".timeindex", 7, 0x00), seg0 + ".timeindex", 0, "differs from the max timestamp"},
		{"timeindex offset", txnDir, poke(seg0+".timeindex", 8, be32(153)...), seg0 + ".timeindex", 0, "not the last offset of any batch"},
		{"leader epochs", txnDir, write(LeaderEpochFile, "0\n2\n0 0\n"), LeaderEpochFile, -1, "count line says 2"},
		{"partition.metadata", txnDir, write("partition.metadata", "version: 0\ntopic_id: nonsense\n"), "partition.metadata", -1, "topic id"},
		{"overlapping segment", txnDir, func(t *testing.T, dir string) {
			// A second segment repeating offsets of the first.
			writeFile(t, filepath.Join(dir, "00000000000000000100.log"), readFile(t, filepath.Join(dir, seg0+".log")))
		}, "00000000000000000100.log", 0, "below the segment's base offset 100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPartition(t, tt.dir)
			tt.damage(t, dir)
			rep, err := Verify(dir)
			if err != nil {
				t.Fatal(err)
			}
			if rep.OK() {
				t.Fatalf("no problem found")
			}
			p := rep.Problems[0]
			if p.Path != filepath.Join(dir, tt.file) || p.Pos != tt.pos || !strings.Contains(p.Error(), tt.match) {
				t.Fatalf("first problem %q (at %s:%d), want %s:%d %q; all: %v", p.Error(), p.Path, p.Pos, tt.file, tt.pos, tt.match, rep.Problems)
			}
		})
	}
}

func TestVerifyFiles(t *testing.T) {
	dir := copyPartition(t, txnDir)
	rep, err := Verify(filepath.Join(dir, seg0+".log"), filepath.Join(dir, seg0+".timeindex"), filepath.Join(dir, LeaderEpochFile))
	if err != nil || !rep.OK() || rep.LogFiles != 1 || rep.IndexFiles != 1 {
		t.Fatalf("%+v, %v", rep, err)
	}
	// An index alone is checked against its log.
	p := filepath.Join(dir, seg0+".timeindex")
	data := readFile(t, p)
	data[7] ^= 1
	writeFile(t, p, data)
	rep, err = Verify(p)
	if err != nil || rep.OK() || rep.LogFiles != 0 {
		t.Fatalf("%+v, %v", rep, err)
	}
}

func TestVerifyBoundsProblems(t *testing.T) {
	dir := copyPartition(t, idsDir)
	// An index of 1000 entries pointing nowhere.
	var data []byte
	for i := range 1000 {
		data = binary.BigEndian.AppendUint32(data, uint32(i+1))
		data = binary.BigEndian.AppendUint32(data, 3)
	}
	writeFile(t, filepath.Join(dir, seg0+".index"), data)
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	// Each entry is one problem (not at a batch start); the first 100
	// are kept.
	if len(rep.Problems) != maxProblemsPerFile || rep.Omitted != 1000-maxProblemsPerFile || rep.OK() {
		t.Fatalf("problems %d, omitted %d", len(rep.Problems), rep.Omitted)
	}
}

// TestVerifyReadsPastDamage checks that a damaged batch is one problem and
// the batches after it are checked: the length of the batch at 574 made
// it swallow the next ten (issue 33).
func TestVerifyReadsPastDamage(t *testing.T) {
	dir := copyPartition(t, txnDir)
	p := filepath.Join(dir, seg0+".log")
	data := readFile(t, p)
	binary.BigEndian.PutUint32(data[574+8:], 3735-574-12)
	data[2000] ^= 0xff // and a payload byte of the batch at 1895
	writeFile(t, p, data)
	rep, err := Verify(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, pr := range rep.Problems {
		got = append(got, fmt.Sprintf("%d %v", pr.Pos, pr.Err))
	}
	if len(rep.Problems) != 2 || rep.Problems[0].Pos != 574 || rep.Problems[1].Pos != 1895 ||
		!strings.Contains(got[0], "bad length") || !strings.Contains(got[1], "bad CRC") {
		t.Fatalf("problems %q", got)
	}
	if rep.Batches != 10 || rep.Damaged != 2 || rep.DamagedBytes != 78+544 {
		t.Fatalf("%d batches, %d damaged ranges of %d bytes", rep.Batches, rep.Damaged, rep.DamagedBytes)
	}
}

// TestVerifyRefusesNonRegular checks that a path Verify would read and
// that is not a regular file is refused, not passed over (issue 33).
func TestVerifyRefusesNonRegular(t *testing.T) {
	for _, tt := range []struct {
		name string
		make func(path string) error
	}{
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }},
		{"link to /dev/zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := copyPartition(t, txnDir)
			p := filepath.Join(dir, "00000000000000000100.log")
			if err := tt.make(p); err != nil {
				t.Fatal(err)
			}
			for _, arg := range []string{dir, p} {
				if _, err := Verify(arg); !errors.Is(err, safefile.ErrNotRegular) || !strings.Contains(err.Error(), p) {
					t.Errorf("Verify(%s) = %v, want a refusal naming %s", arg, err, p)
				}
			}
		})
	}
}
