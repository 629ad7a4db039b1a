package segment

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/records"
)

// Content is a kind of file found in a Kafka partition directory, as told
// by a file's name or by its bytes.
type Content int

const (
	// Unrecognised is bytes that match no kind, or a name Kafka does not
	// give.
	Unrecognised Content = iota
	// Blank is an empty file, or one that starts with zeros: any
	// preallocated file (a segment or index with nothing in it yet).
	Blank
	Segment
	OffsetIndex
	TimeIndex
	TxnIndex
	ProducerSnapshot
	LeaderEpochs
	PartitionMetadata
)

func (c Content) String() string {
	switch c {
	case Unrecognised:
		return "unrecognised"
	case Blank:
		return "empty or zeros"
	case Segment:
		return "a log segment"
	case OffsetIndex:
		return "an offset index"
	case TimeIndex:
		return "a time index"
	case TxnIndex:
		return "a transaction index"
	case ProducerSnapshot:
		return "a producer state snapshot"
	case LeaderEpochs:
		return "a leader-epoch-checkpoint"
	case PartitionMetadata:
		return "a partition.metadata file"
	}
	return fmt.Sprintf("Content(%d)", int(c))
}

// ContentByName returns what a file's name says it holds: by its
// extension (.log, .index, .timeindex, .txnindex, .snapshot, after any of
// Kafka's .cleaned, .swap or .deleted suffixes), whether or not the rest
// is Kafka's 20 digits, or by the names of leader-epoch-checkpoint and
// partition.metadata; Unrecognised for any other name.
func ContentByName(path string) Content {
	name := filepath.Base(path)
	switch name {
	case LeaderEpochFile:
		return LeaderEpochs
	case logdir.MetadataFile:
		return PartitionMetadata
	}
	for _, suffix := range []string{".cleaned", ".swap", ".deleted"} {
		name = strings.TrimSuffix(name, suffix)
	}
	switch filepath.Ext(name) {
	case ".log":
		return Segment
	case ".index":
		return OffsetIndex
	case ".timeindex":
		return TimeIndex
	case ".txnindex":
		return TxnIndex
	case ".snapshot":
		return ProducerSnapshot
	}
	return Unrecognised
}

// kafkaName reports whether Kafka gives a file in a partition directory
// this name.
func kafkaName(path string) bool {
	kind, _, _ := logdir.ParseFileName(path)
	name := filepath.Base(path)
	return kind != logdir.KindOther || name == LeaderEpochFile || name == logdir.MetadataFile
}

// Identity is what a file is by its name and by its bytes.
type Identity struct {
	Path      string
	ByName    Content
	ByContent Content
}

// Mismatch reports whether the name says one kind of file and the bytes
// are clearly another.
func (id Identity) Mismatch() bool {
	return id.ByName != Unrecognised && id.ByContent > Blank && id.ByContent != id.ByName
}

// ReadAs is what to read the file as: what its bytes are when they match
// a kind, else what its name says, else a segment (whose reader says
// what is wrong with the bytes).
func (id Identity) ReadAs() Content {
	switch {
	case id.ByContent > Blank:
		return id.ByContent
	case id.ByName != Unrecognised:
		return id.ByName
	}
	return Segment
}

// MismatchError describes a mismatch, for a problem or a warning.
func (id Identity) MismatchError() error {
	return &Error{Path: id.Path, Pos: -1, Err: fmt.Errorf("named as %v but its bytes are %v", id.ByName, id.ByContent)}
}

// identifySample is how much of a file Identify looks at, besides the
// first batch or a snapshot's checksum.
const identifySample = 64 << 10

// Identify tells what the file at path holds by its bytes, and compares
// that with its name. The name wins when the bytes fit it; otherwise the
// bytes are tried as each kind in turn, the most distinctive first (those
// with a checksum). Only a regular file is opened.
func Identify(path string) (Identity, error) {
	id := Identity{Path: path, ByName: ContentByName(path)}
	in, size, err := openRegular(path)
	if err != nil {
		return id, err
	}
	defer in.Close()
	sample := make([]byte, min(size, identifySample))
	if _, err := io.ReadFull(io.NewSectionReader(in.File(), 0, size), sample); err != nil {
		return id, &Error{Path: path, Pos: -1, Err: fmt.Errorf("reading: %w", err)}
	}
	f := sniffed{r: in.File(), size: size, sample: sample}
	if f.blank() {
		id.ByContent = Blank
		return id, nil
	}
	if id.ByName != Unrecognised && f.is(id.ByName) {
		id.ByContent = id.ByName
		return id, nil
	}
	// Checksummed formats first, then text ones, then the indexes,
	// whose entries are only checked for order.
	for _, c := range []Content{Segment, ProducerSnapshot, LeaderEpochs, PartitionMetadata, TxnIndex, OffsetIndex, TimeIndex} {
		if c != id.ByName && f.is(c) {
			id.ByContent = c
			return id, nil
		}
	}
	return id, nil
}

// sniffed is a file being identified: its first bytes, and the file for
// checksums over more.
type sniffed struct {
	r      io.ReaderAt
	size   int64
	sample []byte
}

func (f sniffed) blank() bool { return len(f.sample) == 0 || zero(f.sample) }

func (f sniffed) is(c Content) bool {
	switch c {
	case Segment:
		return f.segment()
	case OffsetIndex:
		return f.offsetIndex()
	case TimeIndex:
		return f.timeIndex()
	case TxnIndex:
		return f.txnIndex()
	case ProducerSnapshot:
		return f.snapshot()
	case LeaderEpochs:
		return f.leaderEpochs()
	case PartitionMetadata:
		return bytes.HasPrefix(f.sample, []byte("version: ")) && bytes.Contains(f.sample, []byte("\ntopic_id: "))
	}
	return false
}

// segment: the file starts with a valid batch.
func (f sniffed) segment() bool {
	c, ok := plausibleBatch(f.sample, f.size, records.DefaultMaxBatchSize)
	if !ok {
		return false
	}
	sum, err := checksumAt(f.r, c.crcFrom, c.size, c.castagno, f.sample[c.crcFrom:], make([]byte, crcChunk))
	return err == nil && sum == c.crc
}

// offsetIndex: 8-byte entries of relative offset and log position, both
// increasing and non-negative, then zeros (Kafka preallocates).
func (f sniffed) offsetIndex() bool {
	return f.entries(OffsetEntrySize, func(prev, e []byte) bool {
		rel, pos := be.Uint32(e), be.Uint32(e[4:])
		if rel>>31 != 0 || pos>>31 != 0 {
			return false
		}
		return prev == nil || rel > be.Uint32(prev) && pos > be.Uint32(prev[4:])
	})
}

// maxPlausibleTimestamp is 2100-01-01 in ms: a time index entry's
// timestamp is the max timestamp of a batch.
const maxPlausibleTimestamp = 4102444800000

// timeIndex: 12-byte entries of timestamp and relative offset, the
// timestamps increasing, the offsets not decreasing, then zeros.
func (f sniffed) timeIndex() bool {
	return f.entries(TimeEntrySize, func(prev, e []byte) bool {
		ts, rel := int64(be.Uint64(e)), be.Uint32(e[8:])
		if ts < 0 || ts > maxPlausibleTimestamp || rel>>31 != 0 {
			return false
		}
		return prev == nil || ts > int64(be.Uint64(prev)) && rel >= be.Uint32(prev[8:])
	})
}

// entries checks the sample as index entries of size n: at least one in
// use, each one ok after the previous, and zeros after the first entry
// whose relative offset is 0 (Kafka's end of the entries in use).
func (f sniffed) entries(n int, ok func(prev, e []byte) bool) bool {
	if f.size%int64(n) != 0 {
		return false
	}
	var prev []byte
	for i := 0; i+n <= len(f.sample); i += n {
		e := f.sample[i : i+n]
		if zero(e) || prev != nil && relOf(e, n) == 0 {
			return prev != nil && zero(f.sample[i:])
		}
		if !ok(prev, e) {
			return false
		}
		prev = e
	}
	return prev != nil
}

func relOf(e []byte, n int) uint32 {
	if n == TimeEntrySize {
		return be.Uint32(e[8:])
	}
	return be.Uint32(e)
}

// txnEntrySize is a .txnindex entry (Kafka's AbortedTxn): version,
// producer id, first, last and last stable offsets.
const txnEntrySize = 2 + 4*8

// txnIndex: whole entries of version 0 with first <= last offset.
func (f sniffed) txnIndex() bool {
	if f.size%txnEntrySize != 0 {
		return false
	}
	for i := 0; i+txnEntrySize <= len(f.sample); i += txnEntrySize {
		e := f.sample[i:]
		pid, first, last, lso := int64(be.Uint64(e[2:])), int64(be.Uint64(e[10:])), int64(be.Uint64(e[18:])), int64(be.Uint64(e[26:]))
		if be.Uint16(e) != 0 || pid < 0 || first < 0 || last < first || lso < 0 {
			return false
		}
	}
	return true
}

// snapshot: version 1 and a CRC-32C of the rest that matches (Kafka's
// ProducerStateManager snapshot).
func (f sniffed) snapshot() bool {
	const entriesAt = 6
	if f.size < entriesAt+4 || be.Uint16(f.sample) != 1 {
		return false
	}
	sum, err := checksumAt(f.r, entriesAt, f.size, true, f.sample[entriesAt:], make([]byte, crcChunk))
	return err == nil && sum == be.Uint32(f.sample[2:])
}

// leaderEpochs: a version line "0" and a count line.
func (f sniffed) leaderEpochs() bool {
	version, rest, ok := bytes.Cut(f.sample, []byte("\n"))
	if !ok || string(version) != "0" {
		return false
	}
	count, _, ok := bytes.Cut(rest, []byte("\n"))
	_, err := strconv.ParseUint(string(count), 10, 31)
	return ok && err == nil
}

// checksumAt returns the CRC of bytes [from, to) of r, of which the first
// ones are already in have, reading the rest through buf.
func checksumAt(r io.ReaderAt, from, to int64, castagno bool, have, buf []byte) (uint32, error) {
	table := crc32.IEEETable
	if castagno {
		table = castagnoli
	}
	have = have[:min(int64(len(have)), to-from)]
	sum := crc32.Update(0, table, have)
	for pos := from + int64(len(have)); pos < to; {
		chunk := buf[:min(int64(len(buf)), to-pos)]
		n, err := r.ReadAt(chunk, pos)
		sum = crc32.Update(sum, table, chunk[:n])
		pos += int64(n)
		if err != nil && pos < to {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return 0, err
		}
	}
	return sum, nil
}
