package segment

import (
	"encoding/binary"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/logdir"
)

func offsetEntries(pairs ...uint32) []byte {
	var b []byte
	for _, v := range pairs {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	return b
}

func timeEntry(ts int64, rel uint32) []byte {
	b := binary.BigEndian.AppendUint64(nil, uint64(ts))
	return binary.BigEndian.AppendUint32(b, rel)
}

func TestReadIndex(t *testing.T) {
	const base = 100
	name := func(ext string) string { return "00000000000000000100" + ext }
	cat := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	tests := []struct {
		name     string
		file     string
		data     []byte
		want     []IndexEntry
		unused   int
		nonZero  int64
		trailing int
	}{
		{"offset index, trimmed", name(".index"), offsetEntries(10, 4096, 20, 8200),
			[]IndexEntry{{0, 110, 4096, -1}, {8, 120, 8200, -1}}, 0, -1, 0},
		{"offset index, preallocated", name(".index"), cat(offsetEntries(10, 4096), make([]byte, 8*1000)),
			[]IndexEntry{{0, 110, 4096, -1}}, 1000, -1, 0},
		{"offset index, empty preallocated", name(".index"), make([]byte, 8*100), nil, 100, -1, 0},
		{"offset index, garbage after the end", name(".index"), cat(offsetEntries(10, 4096, 0, 0, 0, 7)),
			[]IndexEntry{{0, 110, 4096, -1}}, 2, 16, 0},
		{"offset index, partial entry", name(".index"), cat(offsetEntries(10, 4096), []byte{1, 2, 3}),
			[]IndexEntry{{0, 110, 4096, -1}}, 0, -1, 3},
		{"offset index, entry at base offset first", name(".index"), offsetEntries(0, 70, 5, 5000),
			[]IndexEntry{{0, 100, 70, -1}, {8, 105, 5000, -1}}, 0, -1, 0},
		{"time index, preallocated", name(".timeindex"), cat(timeEntry(1000, 3), timeEntry(2000, 9), make([]byte, 12*50)),
			[]IndexEntry{{0, 103, -1, 1000}, {12, 109, -1, 2000}}, 50, -1, 0},
		{"time index, empty", name(".timeindex"), nil, nil, 0, -1, 0},
		{"time index, cleaned suffix", name(".timeindex.cleaned"), timeEntry(5, 1), []IndexEntry{{0, 101, -1, 5}}, 0, -1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(t.TempDir(), tt.file), tt.data)
			var got []IndexEntry
			info, err := ReadIndex(path, func(e IndexEntry) error {
				got = append(got, e)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("entries %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d: %+v, want %+v", i, got[i], tt.want[i])
				}
			}
			if info.BaseOffset != base || info.Entries != len(tt.want) || info.Unused != tt.unused ||
				info.NonZeroUnused != tt.nonZero || info.TrailingBytes != tt.trailing {
				t.Errorf("info %+v, want %d entries, %d unused, non-zero at %d, %d trailing", info, len(tt.want), tt.unused, tt.nonZero, tt.trailing)
			}
		})
	}
}

func TestReadIndexRealFiles(t *testing.T) {
	info, err := ReadIndex(filepath.Join(idsDir, seg0+".index"), func(e IndexEntry) error {
		if e.Offset != 324 || e.Position != 4350 {
			t.Errorf("entry %+v, want offset 324 at position 4350 (what DumpLogSegments prints)", e)
		}
		return nil
	})
	if err != nil || info.Entries != 1 || info.Kind != logdir.KindIndex {
		t.Fatalf("info %+v, %v", info, err)
	}
	info, err = ReadIndex(filepath.Join(txnDir, seg0+".timeindex"), func(e IndexEntry) error {
		if e.Offset != 155 || e.Timestamp != 1795295512831 {
			t.Errorf("entry %+v", e)
		}
		return nil
	})
	if err != nil || info.Entries != 1 || info.Kind != logdir.KindTimeIndex {
		t.Fatalf("info %+v, %v", info, err)
	}
}

func TestReadIndexRejectsOtherNames(t *testing.T) {
	path := writeFile(t, filepath.Join(t.TempDir(), "x.index"), offsetEntries(1, 2))
	if _, err := ReadIndex(path, func(IndexEntry) error { return nil }); err == nil || !strings.Contains(err.Error(), "not an index file") {
		t.Fatalf("err %v", err)
	}
}

func TestIndexHint(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, filepath.Join(dir, seg0+".index"), append(offsetEntries(10, 4000, 20, 8000, 30, 12000), make([]byte, 8*20)...))
	for _, tt := range []struct{ pos, want int64 }{
		{0, 0}, {3999, 0}, {4000, 4000}, {7999, 4000}, {8000, 8000}, {12000, 12000}, {1 << 40, 12000},
	} {
		got, err := indexHint(path, tt.pos)
		if err != nil || got != tt.want {
			t.Errorf("indexHint(%d) = %d, %v; want %d", tt.pos, got, err, tt.want)
		}
	}
	empty := writeFile(t, filepath.Join(dir, "00000000000000000001.index"), make([]byte, 800))
	if got, err := indexHint(empty, 5000); err != nil || got != 0 {
		t.Errorf("indexHint on an empty preallocated index = %d, %v", got, err)
	}
}
