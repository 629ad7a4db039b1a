package segment

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// snapshotBytes is a producer state snapshot as Kafka writes it: version
// 1, a CRC-32C of the rest, and an entry array (here one entry's worth
// of bytes).
func snapshotBytes() []byte {
	body := binary.BigEndian.AppendUint32(nil, 1)
	body = append(body, make([]byte, 38)...)
	b := binary.BigEndian.AppendUint16(nil, 1)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(body, crc32.MakeTable(crc32.Castagnoli)))
	return append(b, body...)
}

// txnBytes is one aborted transaction entry of a .txnindex.
func txnBytes() []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	for _, v := range []uint64{15, 26, 50, 51} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func TestIdentify(t *testing.T) {
	seg := readFile(t, filepath.Join(txnDir, seg0+".log"))
	idx := readFile(t, filepath.Join(idsDir, seg0+".index"))
	tidx := readFile(t, filepath.Join(txnDir, seg0+".timeindex"))
	epochs := readFile(t, filepath.Join(txnDir, LeaderEpochFile))
	meta := readFile(t, filepath.Join(txnDir, "partition.metadata"))
	damaged := append([]byte(nil), seg...)
	damaged[100] ^= 1
	dir := t.TempDir()
	tests := []struct {
		name      string
		data      []byte
		byName    Content
		byContent Content
		readAs    Content
		mismatch  bool
	}{
		{seg0 + ".log", seg, Segment, Segment, Segment, false},
		{seg0 + ".index", idx, OffsetIndex, OffsetIndex, OffsetIndex, false},
		{seg0 + ".timeindex", tidx, TimeIndex, TimeIndex, TimeIndex, false},
		{LeaderEpochFile, epochs, LeaderEpochs, LeaderEpochs, LeaderEpochs, false},
		{"partition.metadata", meta, PartitionMetadata, PartitionMetadata, PartitionMetadata, false},
		{seg0 + ".snapshot", snapshotBytes(), ProducerSnapshot, ProducerSnapshot, ProducerSnapshot, false},
		{seg0 + ".txnindex", txnBytes(), TxnIndex, TxnIndex, TxnIndex, false},
		// The name says nothing: the bytes decide.
		{seg0, idx, Unrecognised, OffsetIndex, OffsetIndex, false},
		{"copy", seg, Unrecognised, Segment, Segment, false},
		// The name says one thing, the bytes another.
		{"00000000000000000001.log", idx, Segment, OffsetIndex, OffsetIndex, true},
		{".log", idx, Segment, OffsetIndex, OffsetIndex, true},
		{"00000000000000000002.index", seg, OffsetIndex, Segment, Segment, true},
		{"00000000000000000003.index", tidx, OffsetIndex, TimeIndex, TimeIndex, true},
		{"00000000000000000004.log", snapshotBytes(), Segment, ProducerSnapshot, ProducerSnapshot, true},
		{"00000000000000000005.log", txnBytes(), Segment, TxnIndex, TxnIndex, true},
		{"00000000000000000006.timeindex", epochs, TimeIndex, LeaderEpochs, LeaderEpochs, true},
		// A damaged segment is still read as what its name says.
		{"00000000000000000007.log", damaged, Segment, Unrecognised, Segment, false},
		{"00000000000000000008.index", make([]byte, 800), OffsetIndex, Blank, OffsetIndex, false},
		{"00000000000000000009.log", nil, Segment, Blank, Segment, false},
		{"notes", []byte("just some text\n"), Unrecognised, Unrecognised, Segment, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, filepath.Join(dir, tt.name), tt.data)
			id, err := Identify(path)
			if err != nil {
				t.Fatal(err)
			}
			if id.ByName != tt.byName || id.ByContent != tt.byContent || id.ReadAs() != tt.readAs || id.Mismatch() != tt.mismatch {
				t.Fatalf("by name %v, by content %v, read as %v, mismatch %v; want %v, %v, %v, %v",
					id.ByName, id.ByContent, id.ReadAs(), id.Mismatch(), tt.byName, tt.byContent, tt.readAs, tt.mismatch)
			}
		})
	}
}

func TestIdentifyRefusesNonRegular(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), seg0+".log")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{fifo, t.TempDir(), "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			_, err := Identify(path)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, safefile.ErrNotRegular) {
				t.Errorf("Identify(%s) = %v, want a refusal", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("Identify(%s) blocked", path)
		}
	}
}

func TestReadIndexAsByContent(t *testing.T) {
	dir := t.TempDir()
	idx := readFile(t, filepath.Join(idsDir, seg0+".index"))
	for _, tt := range []struct {
		name      string
		base      int64
		baseKnown bool
	}{
		{"00000000000000000100", 100, true},
		{"00000000000000000100.log", 100, true},
		{".log", 0, false},
	} {
		path := writeFile(t, filepath.Join(dir, tt.name), idx)
		var got []IndexEntry
		info, err := ReadIndexAs(path, logdir.KindIndex, func(e IndexEntry) error { got = append(got, e); return nil })
		if err != nil || info.BaseKnown != tt.baseKnown || info.BaseOffset != tt.base || len(got) != 1 || got[0].Offset != tt.base+324 || got[0].Position != 4350 {
			t.Errorf("%s: %+v, %v, %v", tt.name, info, got, err)
		}
	}
	if _, err := ReadIndexAs(filepath.Join(dir, ".log"), logdir.KindLog, func(IndexEntry) error { return nil }); err == nil {
		t.Error("read a log as an index")
	}
}
