package segment

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/logdir"
)

// Entry sizes of Kafka's index files (OffsetIndex, TimeIndex).
const (
	OffsetEntrySize = 8  // 4-byte relative offset, 4-byte position
	TimeEntrySize   = 12 // 8-byte timestamp, 4-byte relative offset
)

// IndexEntry is one entry of an .index or .timeindex file.
type IndexEntry struct {
	// Pos is the entry's byte position in the index file.
	Pos int64
	// Offset is the absolute offset: the file's base offset plus the
	// stored relative offset.
	Offset int64
	// Position is the byte position in the .log file, for an offset
	// index; -1 for a time index.
	Position int64
	// Timestamp is the entry's timestamp, for a time index; -1 for an
	// offset index.
	Timestamp int64
}

// IndexInfo describes an index file as a whole.
type IndexInfo struct {
	Kind       logdir.Kind // KindIndex or KindTimeIndex
	BaseOffset int64
	Size       int64
	// Entries is the number of entries in use.
	Entries int
	// Unused is the number of entries after the last one in use. Kafka
	// preallocates index files (segment.index.bytes) and trims them when
	// a segment is closed; until then, and after a crash, the rest of the
	// file is zeros. Like Kafka's DumpLogSegments, an entry after the
	// first whose relative offset is 0 marks the end of the entries in
	// use; an all-zero first entry is unused too (an index with nothing
	// in it yet).
	Unused int
	// NonZeroUnused is the file position of the first unused entry that
	// is not all zeros, -1 when there is none. Kafka never writes one.
	NonZeroUnused int64
	// TrailingBytes is the size of a partial entry at the end of the
	// file (Kafka ignores it; it never writes one).
	TrailingBytes int
	// BaseKnown is false when the file's name does not give its base
	// offset: offsets are then relative to 0.
	BaseKnown bool
}

// BaseOffsetOf returns the base offset a file's name starts with: 20
// digits, as in all of Kafka's segment file names.
func BaseOffsetOf(path string) (int64, bool) {
	name := filepath.Base(path)
	if len(name) < 20 || strings.TrimLeft(name[:20], "0123456789") != "" {
		return 0, false
	}
	base, err := strconv.ParseInt(name[:20], 10, 64)
	return base, err == nil
}

// ReadIndex reads the .index or .timeindex file at path and calls fn with
// each entry in use, in file order, until fn returns an error, which
// ReadIndex returns. The kind and base offset come from the file name
// (NNNNNNNNNNNNNNNNNNNN.index or .timeindex, with Kafka's .cleaned, .swap
// or .deleted suffixes allowed).
func ReadIndex(path string, fn func(IndexEntry) error) (IndexInfo, error) {
	kind, _, _ := logdir.ParseFileName(path)
	if kind != logdir.KindIndex && kind != logdir.KindTimeIndex {
		return IndexInfo{NonZeroUnused: -1}, &Error{Path: path, Pos: -1, Err: errors.New("not an index file: want a name of 20 digits and .index or .timeindex")}
	}
	return ReadIndexAs(path, kind, fn)
}

// ReadIndexAs is ReadIndex for a file of the given kind (logdir.KindIndex
// or KindTimeIndex) whatever its name says, such as one that Identify
// recognised by its bytes. The base offset is the number the name starts
// with when it starts with 20 digits, as Kafka's names do, else 0 (and
// IndexInfo.BaseKnown is false).
func ReadIndexAs(path string, kind logdir.Kind, fn func(IndexEntry) error) (IndexInfo, error) {
	info := IndexInfo{NonZeroUnused: -1}
	if kind != logdir.KindIndex && kind != logdir.KindTimeIndex {
		return info, &Error{Path: path, Pos: -1, Err: fmt.Errorf("cannot read a %v as an index", kind)}
	}
	base, known := BaseOffsetOf(path)
	info.BaseKnown = known
	info.Kind, info.BaseOffset = kind, base
	in, size, err := openRegular(path)
	if err != nil {
		return info, err
	}
	defer in.Close()
	info.Size = size
	entrySize := int64(OffsetEntrySize)
	if kind == logdir.KindTimeIndex {
		entrySize = TimeEntrySize
	}
	info.TrailingBytes = int(size % entrySize)
	n := size / entrySize
	br := bufio.NewReaderSize(io.NewSectionReader(in.File(), 0, n*entrySize), 64<<10)
	var buf [TimeEntrySize]byte
	for i := range n {
		pos := i * entrySize
		if _, err := io.ReadFull(br, buf[:entrySize]); err != nil {
			return info, &Error{Path: path, Pos: pos, Err: fmt.Errorf("reading: %w", err)}
		}
		e, rel := decodeEntry(kind, buf[:entrySize], pos, base)
		// An all-zero first entry is unused too: a preallocated index
		// with nothing in it yet. It would say nothing anyway: offset
		// base at position 0 (or timestamp 0) is where a search starts
		// without an index.
		if info.Unused == 0 && rel == 0 && (i > 0 || zero(buf[:entrySize])) || info.Unused > 0 {
			info.Unused++
			if info.NonZeroUnused < 0 && !zero(buf[:entrySize]) {
				info.NonZeroUnused = pos
			}
			continue
		}
		info.Entries++
		if err := fn(e); err != nil {
			return info, err
		}
	}
	return info, nil
}

// decodeEntry decodes the index entry b at position pos, and returns it
// with its stored relative offset.
func decodeEntry(kind logdir.Kind, b []byte, pos, base int64) (IndexEntry, uint32) {
	e := IndexEntry{Pos: pos, Position: -1, Timestamp: -1}
	var rel uint32
	if kind == logdir.KindIndex {
		rel = be.Uint32(b[0:])
		e.Position = int64(be.Uint32(b[4:]))
	} else {
		e.Timestamp = int64(be.Uint64(b[0:]))
		rel = be.Uint32(b[8:])
	}
	e.Offset = base + int64(rel)
	return e, rel
}

func zero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// indexHint returns the log position of the last offset index entry whose
// position is at most pos, reading the index at path by binary search
// (ReadAt), or 0 when there is none. Entries in use are sorted by
// position and unused ones follow them, so the search treats an unused
// entry as greater than any position. It trusts nothing: a hint the log
// does not confirm is discarded by Lookup.
func indexHint(path string, pos int64) (int64, error) {
	in, size, err := openRegular(path)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	f := in.File()
	var buf [OffsetEntrySize]byte
	read := func(i int64) (rel uint32, position int64, err error) {
		if _, err := f.ReadAt(buf[:], i*OffsetEntrySize); err != nil {
			return 0, 0, err
		}
		return be.Uint32(buf[0:]), int64(be.Uint32(buf[4:])), nil
	}
	// Find the first entry i with position > pos (or unused): the hint
	// is entry i-1.
	lo, hi := int64(0), size/OffsetEntrySize
	for lo < hi {
		mid := lo + (hi-lo)/2
		rel, position, err := read(mid)
		if err != nil {
			return 0, err
		}
		if rel == 0 && (mid > 0 || position == 0) || position > pos {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if lo == 0 {
		return 0, nil
	}
	_, position, err := read(lo - 1)
	return position, err
}

// indexPathFor returns the .index file next to a .log file, or "" when
// the log file's name is not a segment name.
func indexPathFor(logPath string) string {
	const ext = ".log"
	if len(logPath) < len(ext) || logPath[len(logPath)-len(ext):] != ext {
		return ""
	}
	p := logPath[:len(logPath)-len(ext)] + ".index"
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}
