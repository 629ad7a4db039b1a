package segment

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/records"
)

// maxProblemsPerFile bounds the problems kept for one file: a file of
// garbage could otherwise yield one per index entry. The rest are counted
// in Report.Omitted.
const maxProblemsPerFile = 100

// Report is what Verify found.
type Report struct {
	// Problems are the inconsistencies found, each with file and
	// position, in the order found.
	Problems []Error
	// Omitted counts problems beyond maxProblemsPerFile for one file.
	Omitted int

	Partitions   int
	LogFiles     int
	Batches      int
	IndexFiles   int
	IndexEntries int
	// Unchecked lists files that were not checked: kinds Verify does
	// not read (.txnindex, .snapshot) and segment files in transition
	// (.cleaned, .swap, .deleted).
	Unchecked []string
	// Missing lists expected files that do not exist: a partition
	// directory without partition.metadata or leader-epoch-checkpoint.
	// Kafka creates both lazily, so this is not a problem.
	Missing []string
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// Verify checks the given log directories, partition directories or files
// of one or more partitions:
//
//   - every batch of every .log file is well formed and its CRC matches;
//   - offsets increase strictly from batch to batch, and from one .log file
//     of a partition to the next (ordered by base offset), and no batch
//     starts below its file's base offset;
//   - every entry in use of an .index file points at the start of a batch
//     whose offsets do not begin after the entry's offset (so Kafka's
//     lookup from it finds the offset), with offsets and positions
//     increasing; unused preallocated entries are zeros;
//   - every entry in use of a .timeindex file names the last offset of a
//     batch in its segment with that batch's max timestamp, with
//     timestamps increasing (Kafka's DumpLogSegments checks);
//   - leader-epoch-checkpoint and partition.metadata are readable.
//
// Problems are returned in the Report; the error is for paths that cannot
// be read at all.
func Verify(paths ...string) (Report, error) {
	var rep Report
	// Files are grouped by partition directory, so that offsets are
	// checked across the files of a partition.
	type group struct {
		whole bool
		files []string
	}
	groups := map[string]*group{}
	var order []string
	add := func(dir string, file string) {
		g := groups[dir]
		if g == nil {
			g = &group{}
			groups[dir] = g
			order = append(order, dir)
		}
		if file == "" {
			g.whole = true
		} else if !slices.Contains(g.files, file) {
			g.files = append(g.files, file)
		}
	}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return rep, err
		}
		if !fi.IsDir() {
			add(filepath.Dir(filepath.Clean(p)), filepath.Clean(p))
			continue
		}
		if loc, err := logdir.ParsePath(p); err == nil && loc.Kind == logdir.KindDir {
			add(filepath.Clean(p), "")
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return rep, err
		}
		found := 0
		for _, e := range entries {
			sub := filepath.Join(p, e.Name())
			if loc, err := logdir.ParsePath(sub); err == nil && loc.Kind == logdir.KindDir && isDir(sub) {
				add(sub, "")
				found++
			}
		}
		if found == 0 {
			return rep, fmt.Errorf("segment: %s is neither a partition directory nor a log directory holding any", p)
		}
	}
	for _, dir := range order {
		v := verifier{rep: &rep}
		g := groups[dir]
		files := g.files
		if g.whole {
			files = nil
		}
		if err := v.partition(dir, files); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

func isDir(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}

// batchRef is what the index checks need of a batch.
type batchRef struct {
	pos          int64
	first, last  int64
	maxTimestamp int64
}

type verifier struct {
	rep      *Report
	perFile  map[string]int
	prevLast int64 // last offset of the partition's previous batch, -1 before any
	prevAt   string
}

func (v *verifier) problem(path string, pos int64, format string, args ...any) {
	if v.perFile == nil {
		v.perFile = map[string]int{}
	}
	if v.perFile[path] >= maxProblemsPerFile {
		v.rep.Omitted++
		return
	}
	v.perFile[path]++
	v.rep.Problems = append(v.rep.Problems, Error{Path: path, Pos: pos, Err: fmt.Errorf(format, args...)})
}

func (v *verifier) fail(err error) {
	var e *Error
	if errors.As(err, &e) {
		v.problem(e.Path, e.Pos, "%v", e.Err)
		return
	}
	v.problem("", -1, "%v", err)
}

// segFiles are the files of one segment.
type segFiles struct {
	base                int64
	log, index, timeIdx string
}

// partition verifies dir, or only the given files of it when files is
// non-empty.
func (v *verifier) partition(dir string, files []string) error {
	v.prevLast = -1
	whole := len(files) == 0
	if whole {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(dir, e.Name()))
			}
		}
		v.rep.Partitions++
	}
	segs := map[int64]*segFiles{}
	for _, f := range files {
		kind, base, suffix := logdir.ParseFileName(f)
		if suffix != "" || kind == logdir.KindTxnIndex || kind == logdir.KindSnapshot {
			v.rep.Unchecked = append(v.rep.Unchecked, f)
			continue
		}
		switch kind {
		case logdir.KindLog, logdir.KindIndex, logdir.KindTimeIndex:
			s := segs[base]
			if s == nil {
				s = &segFiles{base: base}
				segs[base] = s
			}
			switch kind {
			case logdir.KindLog:
				s.log = f
			case logdir.KindIndex:
				s.index = f
			default:
				s.timeIdx = f
			}
			continue
		}
		switch filepath.Base(f) {
		case LeaderEpochFile:
			if !whole {
				v.checkEpochs(f)
			}
		case logdir.MetadataFile:
			if !whole {
				if _, err := logdir.ReadPartitionMetadata(dir); err != nil {
					v.problem(f, -1, "%v", err)
				}
			}
		default:
			if !whole {
				v.problem(f, -1, "not a file kscope can verify (want .log, .index, .timeindex, %s or %s)", LeaderEpochFile, logdir.MetadataFile)
			}
		}
	}
	if whole {
		v.checkEpochs(filepath.Join(dir, LeaderEpochFile))
		if _, err := logdir.ReadPartitionMetadata(dir); errors.Is(err, fs.ErrNotExist) {
			v.rep.Missing = append(v.rep.Missing, filepath.Join(dir, logdir.MetadataFile))
		} else if err != nil {
			v.problem(filepath.Join(dir, logdir.MetadataFile), -1, "%v", err)
		}
	}
	bases := make([]int64, 0, len(segs))
	for b := range segs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for _, b := range bases {
		s := segs[b]
		var batches []batchRef
		complete := false
		if s.log != "" {
			batches, complete = v.checkLog(s.log, s.base)
		} else if s.index != "" || s.timeIdx != "" {
			// An index is checked against its log; alone it can only
			// be decoded.
			logPath := filepath.Join(filepath.Dir(firstNonEmpty(s.index, s.timeIdx)), fmt.Sprintf("%020d.log", s.base))
			if _, err := os.Stat(logPath); err == nil {
				batches, complete = v.scanOnly(logPath)
			} else if whole {
				v.problem(firstNonEmpty(s.index, s.timeIdx), -1, "no %s next to it", filepath.Base(logPath))
			}
		}
		if s.index != "" {
			v.checkOffsetIndex(s.index, batches, complete)
		}
		if s.timeIdx != "" {
			v.checkTimeIndex(s.timeIdx, batches, complete)
		}
	}
	return nil
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func (v *verifier) checkEpochs(path string) {
	if _, err := ReadLeaderEpochCheckpoint(path); errors.Is(err, fs.ErrNotExist) {
		v.rep.Missing = append(v.rep.Missing, path)
	} else if err != nil {
		v.fail(err)
	}
}

// checkLog scans a .log file, checking each batch and the offset order,
// and returns its batches and whether the whole file was read.
func (v *verifier) checkLog(path string, base int64) ([]batchRef, bool) {
	v.rep.LogFiles++
	r, err := Open(path, nil)
	if err != nil {
		v.fail(err)
		return nil, false
	}
	defer r.Close()
	var batches []batchRef
	for {
		b, err := r.Next()
		if err == io.EOF {
			return batches, true
		}
		if err != nil {
			v.fail(err)
			return batches, false
		}
		v.rep.Batches++
		ref := refOf(b)
		if !b.CRCValid {
			v.problem(path, b.Position, "CRC mismatch: stored %#08x", b.CRC)
		}
		if b.Magic == 2 && b.LastOffset < b.BaseOffset {
			v.problem(path, b.Position, "last offset %d is below base offset %d", b.LastOffset, b.BaseOffset)
		}
		if ref.first < base {
			v.problem(path, b.Position, "offset %d is below the segment's base offset %d", ref.first, base)
		}
		if v.prevLast >= 0 && ref.first <= v.prevLast {
			v.problem(path, b.Position, "offset %d does not follow the previous batch's last offset %d (%s)", ref.first, v.prevLast, v.prevAt)
		}
		v.prevLast = max(v.prevLast, b.LastOffset)
		v.prevAt = fmt.Sprintf("%s position %d", filepath.Base(path), b.Position)
		batches = append(batches, ref)
	}
}

// scanOnly reads a .log file's batches for checking an index given without
// its log, reporting nothing about the log itself.
func (v *verifier) scanOnly(path string) ([]batchRef, bool) {
	r, err := Open(path, nil)
	if err != nil {
		return nil, false
	}
	defer r.Close()
	var batches []batchRef
	for {
		b, err := r.Next()
		if err != nil {
			return batches, err == io.EOF
		}
		batches = append(batches, refOf(b))
	}
}

// refOf keeps what index checks need. A legacy compressed wrapper states
// only its last offset.
func refOf(b records.Batch) batchRef {
	first := b.BaseOffset
	if first < 0 {
		first = b.LastOffset
	}
	return batchRef{pos: b.Position, first: first, last: b.LastOffset, maxTimestamp: b.MaxTimestamp}
}

func (v *verifier) checkOffsetIndex(path string, batches []batchRef, complete bool) {
	v.rep.IndexFiles++
	prevOff, prevPos := int64(-1), int64(-1)
	info, err := ReadIndex(path, func(e IndexEntry) error {
		v.rep.IndexEntries++
		if e.Offset <= prevOff || e.Position < prevPos {
			v.problem(path, e.Pos, "entry (offset %d, position %d) does not follow (offset %d, position %d)", e.Offset, e.Position, prevOff, prevPos)
		}
		prevOff, prevPos = e.Offset, e.Position
		i := sort.Search(len(batches), func(i int) bool { return batches[i].pos >= e.Position })
		switch {
		case i < len(batches) && batches[i].pos == e.Position:
			if b := batches[i]; e.Offset < b.first {
				v.problem(path, e.Pos, "entry offset %d is below the first offset %d of the batch at position %d", e.Offset, b.first, e.Position)
			} else if last := batches[len(batches)-1].last; complete && e.Offset > last {
				v.problem(path, e.Pos, "entry offset %d is beyond the segment's last offset %d", e.Offset, last)
			}
		case complete || i < len(batches):
			v.problem(path, e.Pos, "entry (offset %d) points at log position %d, which is not the start of a batch", e.Offset, e.Position)
		}
		return nil
	})
	v.indexTail(path, info, err)
}

func (v *verifier) checkTimeIndex(path string, batches []batchRef, complete bool) {
	v.rep.IndexFiles++
	byLast := make(map[int64]batchRef, len(batches))
	for _, b := range batches {
		byLast[b.last] = b
	}
	prevTs, prevOff := int64(-1<<63), int64(-1)
	info, err := ReadIndex(path, func(e IndexEntry) error {
		v.rep.IndexEntries++
		if e.Timestamp <= prevTs || e.Offset < prevOff {
			v.problem(path, e.Pos, "entry (timestamp %d, offset %d) does not follow (timestamp %d, offset %d)", e.Timestamp, e.Offset, prevTs, prevOff)
		}
		prevTs, prevOff = e.Timestamp, e.Offset
		b, ok := byLast[e.Offset]
		switch {
		case !ok && complete:
			v.problem(path, e.Pos, "entry offset %d is not the last offset of any batch in the segment", e.Offset)
		case ok && b.maxTimestamp != e.Timestamp:
			v.problem(path, e.Pos, "entry timestamp %d differs from the max timestamp %d of the batch ending at offset %d", e.Timestamp, b.maxTimestamp, e.Offset)
		}
		return nil
	})
	v.indexTail(path, info, err)
}

func (v *verifier) indexTail(path string, info IndexInfo, err error) {
	if err != nil {
		v.fail(err)
		return
	}
	if info.NonZeroUnused >= 0 {
		v.problem(path, info.NonZeroUnused, "unused entry after the last entry in use is not zeros")
	}
	if info.TrailingBytes != 0 {
		v.problem(path, info.Size-int64(info.TrailingBytes), "%d bytes at the end are less than an entry", info.TrailingBytes)
	}
}
