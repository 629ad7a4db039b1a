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
	"github.com/kscope-dev/kscope/internal/safefile"
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
	// not read (.txnindex, .snapshot), segment files in transition
	// (.cleaned, .swap, .deleted), and entries of a partition directory
	// whose names Kafka does not give.
	Unchecked []string
	// Missing lists expected files that do not exist: a partition
	// directory without partition.metadata or leader-epoch-checkpoint.
	// Kafka creates both lazily, so this is not a problem.
	Missing []string
	// Damaged counts the damaged byte ranges of .log files (each is
	// also a problem) and DamagedBytes their bytes, which no batch was
	// read from.
	Damaged      int
	DamagedBytes int64
}

// OK reports whether no problem was found.
func (r *Report) OK() bool { return len(r.Problems) == 0 && r.Omitted == 0 }

// Verify checks the given log directories, partition directories or files
// of one or more partitions:
//
//   - every batch of every .log file is well formed and its CRC matches;
//     a damaged byte range is one problem, and the check goes on at the
//     next valid batch (see [Damage]);
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
//   - leader-epoch-checkpoint and partition.metadata are readable;
//   - each .log, .index and .timeindex file's bytes are what its name
//     says (see [Identify]).
//
// Problems are returned in the Report; the error is for paths that cannot
// be read at all, and for a path Verify would read that is not a regular
// file (a FIFO, a device, a directory where a file is expected), which it
// refuses with an error wrapping safefile.ErrNotRegular.
func Verify(paths ...string) (Report, error) {
	var rep Report
	groups, err := groupPaths(paths)
	if err != nil {
		return rep, err
	}
	for _, g := range groups {
		v := verifier{rep: &rep}
		if err := v.partition(g.dir, g.files); err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// group is a partition directory to verify: the whole of it (files nil)
// or the given files of it.
type group struct {
	dir   string
	whole bool
	files []string
}

// groupPaths groups the paths by partition directory, so that offsets
// are checked across the files of a partition.
func groupPaths(paths []string) ([]*group, error) {
	var groups []*group
	byDir := map[string]*group{}
	add := func(dir string, file string) {
		g := byDir[dir]
		if g == nil {
			g = &group{dir: dir}
			byDir[dir] = g
			groups = append(groups, g)
		}
		if file == "" {
			g.whole, g.files = true, nil
		} else if !g.whole && !slices.Contains(g.files, file) {
			g.files = append(g.files, file)
		}
	}
	for _, p := range paths {
		dirs, file, err := partitionsOf(p)
		if err != nil {
			return nil, err
		}
		if file != "" {
			add(filepath.Dir(file), file)
		}
		for _, d := range dirs {
			add(d, "")
		}
	}
	return groups, nil
}

// partitionsOf returns the partition directories a path names (itself, or
// those in a log directory), or the file it is. A path that is neither a
// directory nor a regular file is refused.
func partitionsOf(p string) (dirs []string, file string, err error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, "", err
	}
	if !fi.IsDir() {
		in, err := safefile.Open(p, safefile.Regular)
		if err != nil {
			return nil, "", err
		}
		in.Close()
		return nil, filepath.Clean(p), nil
	}
	if ContentByName(p) != Unrecognised {
		return nil, "", fmt.Errorf("%s: %w (%s)", p, safefile.ErrNotRegular, safefile.Describe(fi.Mode()))
	}
	if loc, err := logdir.ParsePath(p); err == nil && loc.Kind == logdir.KindDir {
		return []string{filepath.Clean(p)}, "", nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, "", err
	}
	for _, e := range entries {
		sub := filepath.Join(p, e.Name())
		if loc, err := logdir.ParsePath(sub); err == nil && loc.Kind == logdir.KindDir && isDir(sub) {
			dirs = append(dirs, sub)
		}
	}
	if len(dirs) == 0 {
		return nil, "", fmt.Errorf("segment: %s is neither a partition directory nor a log directory holding any", p)
	}
	return dirs, "", nil
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

// logScan is what reading a .log file found, for checking its indexes.
type logScan struct {
	batches []batchRef
	// complete is set when the file was read to its end.
	complete bool
	// damaged are the byte ranges the reader skipped.
	damaged []Damage
}

// inDamage reports whether a log position lies in a damaged range.
func (s *logScan) inDamage(pos int64) bool {
	for _, d := range s.damaged {
		if pos >= d.Start && pos < d.End {
			return true
		}
	}
	return false
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
		var err error
		if files, err = v.listPartition(dir); err != nil {
			return err
		}
		v.rep.Partitions++
	}
	segs := map[int64]*segFiles{}
	for _, f := range files {
		v.sortFile(dir, f, segs)
	}
	if whole {
		v.checkEpochs(filepath.Join(dir, LeaderEpochFile))
		v.checkMetadata(dir, true)
	}
	bases := make([]int64, 0, len(segs))
	for b := range segs {
		bases = append(bases, b)
	}
	slices.Sort(bases)
	for _, b := range bases {
		v.checkSegment(segs[b], whole)
	}
	return nil
}

// listPartition returns the files of a partition directory that Verify
// reads: those named as Kafka names them. It refuses one that is not a
// regular file (following symbolic links, as Kafka does); other entries
// are counted as unchecked.
func (v *verifier) listPartition(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if !kafkaName(p) {
			v.rep.Unchecked = append(v.rep.Unchecked, p)
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: %w (%s)", p, safefile.ErrNotRegular, safefile.Describe(fi.Mode()))
		}
		if name := e.Name(); name != LeaderEpochFile && name != logdir.MetadataFile {
			files = append(files, p) // those two are checked by name
		}
	}
	return files, nil
}

// sortFile files f under its segment in segs, after checking that its
// bytes are what its name says; or checks it, or counts it as unchecked.
func (v *verifier) sortFile(dir, f string, segs map[int64]*segFiles) {
	kind, _, suffix := logdir.ParseFileName(f)
	if suffix != "" || kind == logdir.KindTxnIndex || kind == logdir.KindSnapshot {
		v.rep.Unchecked = append(v.rep.Unchecked, f)
		return
	}
	switch filepath.Base(f) {
	case LeaderEpochFile:
		v.checkEpochs(f)
		return
	case logdir.MetadataFile:
		v.checkMetadata(dir, false)
		return
	}
	id, err := Identify(f)
	if err != nil {
		v.fail(err)
		return
	}
	if id.Mismatch() {
		v.fail(id.MismatchError())
		return
	}
	what := id.ReadAs()
	if id.ByName == Unrecognised && (id.ByContent <= Blank || what != Segment && what != OffsetIndex && what != TimeIndex) {
		if what == TxnIndex || what == ProducerSnapshot {
			v.rep.Unchecked = append(v.rep.Unchecked, f)
			return
		}
		v.problem(f, -1, "not a file kscope can verify (want .log, .index, .timeindex, %s or %s)", LeaderEpochFile, logdir.MetadataFile)
		return
	}
	base, ok := BaseOffsetOf(f)
	if !ok {
		base = -1 // unknown: no batch is below it
	}
	s := segs[base]
	if s == nil {
		s = &segFiles{base: base}
		segs[base] = s
	}
	switch what {
	case Segment:
		s.log = f
	case OffsetIndex:
		s.index = f
	default:
		s.timeIdx = f
	}
}

func (v *verifier) checkMetadata(dir string, whole bool) {
	path := filepath.Join(dir, logdir.MetadataFile)
	_, err := logdir.ReadPartitionMetadata(dir)
	switch {
	case whole && errors.Is(err, fs.ErrNotExist):
		v.rep.Missing = append(v.rep.Missing, path)
	case err != nil:
		v.problem(path, -1, "%v", err)
	}
}

// checkSegment checks a segment's log and its indexes against it.
func (v *verifier) checkSegment(s *segFiles, whole bool) {
	var scan logScan
	if s.log != "" {
		scan = v.checkLog(s.log, s.base)
	} else if s.index != "" || s.timeIdx != "" {
		// An index is checked against its log; alone it can only
		// be decoded.
		logPath := filepath.Join(filepath.Dir(firstNonEmpty(s.index, s.timeIdx)), fmt.Sprintf("%020d.log", s.base))
		if _, err := os.Stat(logPath); err == nil {
			scan = v.scanOnly(logPath)
		} else if whole {
			v.problem(firstNonEmpty(s.index, s.timeIdx), -1, "no %s next to it", filepath.Base(logPath))
		}
	}
	if s.index != "" {
		v.checkOffsetIndex(s.index, &scan)
	}
	if s.timeIdx != "" {
		v.checkTimeIndex(s.timeIdx, &scan)
	}
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
// and returns what it found. Damage is a problem; the scan goes on after
// it.
func (v *verifier) checkLog(path string, base int64) logScan {
	v.rep.LogFiles++
	var scan logScan
	r, err := Open(path, nil)
	if err != nil {
		v.fail(err)
		return scan
	}
	defer r.Close()
	for {
		b, err := r.Next()
		if err == io.EOF {
			scan.complete = true
			return scan
		}
		if d, ok := AsDamage(err); ok {
			v.rep.Damaged++
			v.rep.DamagedBytes += d.End - d.Start
			scan.damaged = append(scan.damaged, *d)
			v.fail(err)
			continue
		}
		if err != nil {
			v.fail(err)
			return scan
		}
		v.rep.Batches++
		v.checkBatch(path, base, b)
		scan.batches = append(scan.batches, refOf(b))
	}
}

// checkBatch checks a valid batch's offsets: in itself, against its
// segment's base offset and against the partition's previous batch.
func (v *verifier) checkBatch(path string, base int64, b records.Batch) {
	ref := refOf(b)
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
}

// scanOnly reads a .log file's batches for checking an index given without
// its log, reporting nothing about the log itself.
func (v *verifier) scanOnly(path string) logScan {
	var scan logScan
	r, err := Open(path, nil)
	if err != nil {
		return scan
	}
	defer r.Close()
	for {
		b, err := r.Next()
		if d, ok := AsDamage(err); ok {
			scan.damaged = append(scan.damaged, *d)
			continue
		}
		if err != nil {
			scan.complete = err == io.EOF
			return scan
		}
		scan.batches = append(scan.batches, refOf(b))
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

func (v *verifier) checkOffsetIndex(path string, scan *logScan) {
	v.rep.IndexFiles++
	batches, complete := scan.batches, scan.complete
	prevOff, prevPos := int64(-1), int64(-1)
	info, err := ReadIndexAs(path, logdir.KindIndex, func(e IndexEntry) error {
		v.rep.IndexEntries++
		if e.Offset <= prevOff || e.Position < prevPos {
			v.problem(path, e.Pos, "entry (offset %d, position %d) does not follow (offset %d, position %d)", e.Offset, e.Position, prevOff, prevPos)
		}
		prevOff, prevPos = e.Offset, e.Position
		if scan.inDamage(e.Position) {
			return nil // its batch is damaged, a problem of the log
		}
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

func (v *verifier) checkTimeIndex(path string, scan *logScan) {
	v.rep.IndexFiles++
	// A damaged batch's last offset is unknown: with damage, only
	// entries naming a batch that was read are checked.
	batches, complete := scan.batches, scan.complete && len(scan.damaged) == 0
	byLast := make(map[int64]batchRef, len(batches))
	for _, b := range batches {
		byLast[b.last] = b
	}
	prevTs, prevOff := int64(-1<<63), int64(-1)
	info, err := ReadIndexAs(path, logdir.KindTimeIndex, func(e IndexEntry) error {
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
