package segment

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/records"
)

// idsOf returns the ids the acceptance test gave records base..last.
func idsOf(base, last int64) string {
	var ids []string
	for o := base; o <= last; o++ {
		ids = append(ids, "seg-ids-zstd-"+strconv.FormatInt(o, 10))
	}
	return strings.Join(ids, ",")
}

func TestLookupEveryBatch(t *testing.T) {
	withIndex := filepath.Join(idsDir, seg0+".log")
	// The same segment without its index, and with an index whose entry
	// points inside a batch: both must still find the right batches.
	noIndex := filepath.Join(t.TempDir(), seg0+".log")
	writeFile(t, noIndex, readFile(t, withIndex))
	badDir := t.TempDir()
	badIndex := writeFile(t, filepath.Join(badDir, seg0+".log"), readFile(t, withIndex))
	writeFile(t, filepath.Join(badDir, seg0+".index"), offsetEntries(5, 1001))

	batches, _, err := scan(t, withIndex)
	if err != nil || len(batches) != 16 {
		t.Fatalf("%d batches, %v", len(batches), err)
	}
	indexed := 0
	for _, path := range []string{withIndex, noIndex, badIndex} {
		for i, b := range batches {
			ranges := []struct {
				pos, n int64
				want   []records.Batch
			}{
				{b.Position, int64(b.Size), batches[i : i+1]},
				{b.Position + 61, 1, batches[i : i+1]}, // inside the batch
			}
			if i+1 < len(batches) {
				ranges = append(ranges, struct {
					pos, n int64
					want   []records.Batch
				}{b.Position + 1, int64(b.Size), batches[i : i+2]})
			}
			for _, rg := range ranges {
				res, err := Lookup(path, rg.pos, rg.n, records.DefaultIDHeader, nil)
				if err != nil {
					t.Fatalf("%s: Lookup(%d, %d): %v", path, rg.pos, rg.n, err)
				}
				if len(res.Matches) != len(rg.want) {
					t.Fatalf("%s: Lookup(%d, %d): %d batches, want %d", path, rg.pos, rg.n, len(res.Matches), len(rg.want))
				}
				for j, m := range res.Matches {
					w := rg.want[j]
					if m.Batch.Position != w.Position || m.Records != w.NumRecords || strings.Join(m.MessageIDs, ",") != idsOf(w.BaseOffset, w.LastOffset) {
						t.Fatalf("%s: Lookup(%d, %d): match %d at %d ids %v, want batch at %d", path, rg.pos, rg.n, j, m.Batch.Position, m.MessageIDs, w.Position)
					}
				}
				if res.ScanStart > rg.pos {
					t.Fatalf("%s: scan started at %d after %d", path, res.ScanStart, rg.pos)
				}
				if path == withIndex && res.ScanStart > 0 {
					indexed++
				}
				if path == badIndex && res.ScanStart != 0 && res.ScanStart != 4350 {
					t.Fatalf("scan start %d", res.ScanStart)
				}
			}
		}
	}
	if indexed == 0 {
		t.Error("no lookup used the index")
	}
}

func TestLookupErrors(t *testing.T) {
	path := filepath.Join(idsDir, seg0+".log")
	size := int64(len(readFile(t, path)))
	for _, tt := range []struct {
		pos, n int64
		match  string
	}{
		{-1, 10, "invalid range"},
		{0, 0, "invalid range"},
		{size, 10, "end of the file"},
	} {
		_, err := Lookup(path, tt.pos, tt.n, records.DefaultIDHeader, nil)
		if err == nil || !strings.Contains(err.Error(), tt.match) || !strings.Contains(err.Error(), path) {
			t.Errorf("Lookup(%d, %d) = %v, want %q", tt.pos, tt.n, err, tt.match)
		}
	}
	// A write into a batch that the file ends inside of: the batches
	// before it, and a truncation error.
	cut := writeFile(t, filepath.Join(t.TempDir(), seg0+".log"), readFile(t, path)[:size-20])
	res, err := Lookup(cut, 0, size, "", nil)
	if !errors.Is(err, records.ErrTruncated) || len(res.Matches) != 15 {
		t.Fatalf("truncated: %d matches, %v", len(res.Matches), err)
	}
	if _, err := Lookup(filepath.Join(t.TempDir(), "missing.log"), 0, 1, "", nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}

// TestLookupPastDamage checks that damage before a range does not hide
// the range's batches, and that damage in it is the error.
func TestLookupPastDamage(t *testing.T) {
	data := readFile(t, filepath.Join(txnDir, seg0+".log"))
	// The batch at 574 claims the next ten batches' bytes.
	binary.BigEndian.PutUint32(data[574+8:], 3735-574-12)
	path := writeFile(t, filepath.Join(t.TempDir(), seg0+".log"), data)
	for _, tt := range []struct {
		pos, n      int64
		matches     []int64
		damaged     int
		errAtDamage bool
	}{
		{1196, 78, []int64{1196}, 1, false}, // after the damage
		{0, 600, []int64{0}, 1, true},       // over it
		{574, 100, []int64{652}, 1, true},   // starting in it
		{3735, 78, []int64{3735}, 1, false}, // the last batch
	} {
		res, err := Lookup(path, tt.pos, tt.n, "", nil)
		var got []int64
		for _, m := range res.Matches {
			got = append(got, m.Batch.Position)
		}
		d, isDamage := AsDamage(err)
		if !reflect.DeepEqual(got, tt.matches) || len(res.Damaged) != tt.damaged || isDamage != tt.errAtDamage ||
			isDamage && (d.Start != 574 || d.Kind != BadLength) || !isDamage && err != nil {
			t.Errorf("Lookup(%d, %d) = %v, %d damaged, %v", tt.pos, tt.n, got, len(res.Damaged), err)
		}
	}
}
