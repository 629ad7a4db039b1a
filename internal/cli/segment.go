package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/segment"
	"github.com/kscope-dev/kscope/internal/segment/segout"
)

func newSegmentCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "segment",
		Short: "Read Kafka log segments: dump them, find the messages at a byte range, verify a log directory",
	}
	cmd.AddCommand(newSegmentDumpCmd(), newSegmentLookupCmd(), newSegmentVerifyCmd())
	return cmd
}

type segmentDumpOptions struct {
	records         bool
	payload         bool
	format          string
	messageIDHeader string
	quiet           bool
}

func newSegmentDumpCmd() *cobra.Command {
	var o segmentDumpOptions
	cmd := &cobra.Command{
		Use:   "dump [flags] FILE...",
		Short: "Print the batches of .log files, or the entries of .index and .timeindex files",
		Long: `Prints one row per record batch of each .log file: position, size, offsets,
record count, magic, compression, CRC validity, producer id/epoch, base
sequence, partition leader epoch, transactional/control flags and
timestamps. With --records, each record's offset, timestamp, key and value
sizes and headers too (values as text when valid UTF-8, else hex); keys and
values only with --payload.

Offset and time indexes are printed entry by entry, up to the first unused
(preallocated, zero) entry. What a file is comes from its bytes: a file
whose name says another kind is printed as what it is and reported (exit 1).

Damage does not stop the dump: each damaged byte range (a bad length, a bad
CRC, a last batch cut short) is reported on stderr with its position and
the dump goes on at the next valid batch (exit 1). Files that are not
regular files are refused (exit 2).`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSegmentDump(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	f.BoolVar(&o.records, "records", false, "print every record of every batch")
	f.BoolVar(&o.payload, "payload", false, "with the records, print keys and values (implies --records)")
	f.StringVar(&o.format, "format", "table", "output format: table, json (JSON Lines) or csv")
	f.StringVar(&o.messageIDHeader, "message-id-header", "", "also print the values of this record header per batch (message_ids)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no per-file summary on stderr")
	check(f, "format", &o.format, oneOf("table", "json", "csv"))
	return cmd
}

func runSegmentDump(stdout, stderr io.Writer, files []string, o *segmentDumpOptions) error {
	if o.payload {
		o.records = true
	}
	if err := distinctInputs(files); err != nil {
		return err
	}
	bw, err := segout.NewBatchWriter(stdout, o.format, o.records, o.messageIDHeader != "")
	if err != nil {
		return badInput(err)
	}
	iw, err := segout.NewIndexWriter(stdout, o.format)
	if err != nil {
		return badInput(err)
	}
	var errs []error
	bad := false
	for _, file := range files {
		ferrs := dumpFile(stderr, bw, iw, file, o)
		for _, ferr := range ferrs {
			var werr *writeError
			if errors.As(ferr, &werr) {
				return ferr
			}
			if isBadInput(ferr) {
				bad = true
			}
		}
		errs = append(errs, ferrs...)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	if len(errs) == 0 {
		return nil
	}
	for _, e := range errs[:len(errs)-1] {
		fmt.Fprintf(stderr, "kscope: %s\n", output.Escape(e.Error()))
	}
	last := errs[len(errs)-1] // printed escaped by Main
	if bad && len(errs) == 1 {
		return badInput(last)
	}
	return last
}

// errNotDumpable is wrapped by the error for a file whose bytes are a
// kind of file dump does not print.
var errNotDumpable = errors.New("dump prints log segments, offset indexes and time indexes")

// dumpFile prints one file as what its bytes are (its name decides only
// when the bytes match no kind), and returns what went wrong: a name that
// says another kind than the bytes is one problem.
func dumpFile(stderr io.Writer, bw segout.BatchWriter, iw segout.IndexWriter, file string, o *segmentDumpOptions) []error {
	id, err := segment.Identify(file)
	if err != nil {
		return []error{err}
	}
	var errs []error
	if id.Mismatch() {
		errs = append(errs, id.MismatchError())
	}
	var ferr error
	switch what := id.ReadAs(); what {
	case segment.OffsetIndex, segment.TimeIndex:
		if err := bw.Flush(); err != nil {
			return []error{&writeError{err}}
		}
		ferr = dumpIndex(stderr, iw, file, what, o.quiet)
		if err := iw.Flush(); err != nil {
			return []error{&writeError{err}}
		}
	case segment.Segment:
		if err := iw.Flush(); err != nil {
			return []error{&writeError{err}}
		}
		ferr = dumpLog(stderr, bw, file, o)
	default:
		ferr = fmt.Errorf("%s: %v: %w", file, what, errNotDumpable)
	}
	if ferr != nil {
		errs = append(errs, ferr)
	}
	return errs
}

// writeError is a failure to write the output, which ends the command.
type writeError struct{ err error }

func (e *writeError) Error() string { return "writing output: " + e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// isBadInput reports whether err means the file is not one the command can
// read at all (missing, unreadable, not a regular file, not a segment).
func isBadInput(err error) bool {
	return errors.Is(err, segment.ErrNotSegment) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) ||
		errors.Is(err, safefile.ErrNotRegular) || errors.Is(err, errNotDumpable)
}

// dumpLog prints the batches of one .log file. A goroutine reads and
// decodes them while this one writes: on two cores the kernel's copy, the
// CRCs and record decoding overlap the formatting (about half the time of
// a batches-only dump).
func dumpLog(stderr io.Writer, w segout.BatchWriter, file string, o *segmentDumpOptions) error {
	r, err := segment.Open(file, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	groups := make(chan []event.SegmentBatch, 4)
	stop := make(chan struct{})
	var readErr error  // set before groups is closed
	var damage []error // likewise
	go func() {
		defer close(groups)
		readErr = readBatchEvents(r, o, groups, stop, &damage)
	}()
	var batches, recs int
	var bytes int64
	for g := range groups {
		for i := range g {
			if err := w.Write(file, &g[i]); err != nil {
				close(stop)
				for range groups { // let the reader see stop and return
				}
				return &writeError{err}
			}
			batches++
			recs += g[i].Count
			bytes += int64(g[i].Size)
		}
	}
	for _, d := range damage {
		fmt.Fprintf(stderr, "kscope: %s\n", output.Escape(d.Error()))
	}
	if !o.quiet {
		fmt.Fprintf(stderr, "kscope: %s: %d batches, %d records, %d bytes%s\n", output.Escape(file), batches, recs, bytes, logTail(r, readErr))
	}
	if readErr != io.EOF {
		return readErr
	}
	if n, skipped := r.Damaged(); n > 0 {
		return fmt.Errorf("%s: %d damaged byte ranges (%d bytes), printed above", file, n, skipped)
	}
	return nil
}

// logTail is the end of a .log file's summary line: the damage skipped,
// and the zeros that ended it.
func logTail(r *segment.Reader, readErr error) string {
	var s string
	if n, skipped := r.Damaged(); n > 0 {
		s = fmt.Sprintf(", %d damaged byte ranges (%d bytes) skipped", n, skipped)
	}
	if z := r.ZeroTail(); z > 0 && readErr == io.EOF {
		s += fmt.Sprintf(", then %d bytes of zeros (preallocated, unused)", z)
	}
	return s
}

// Batch events travel from reader to writer in groups, bounded in batches
// and in records (with --records each record is an event of its own).
const (
	groupBatches = 64
	groupRecords = 4096
)

// readBatchEvents sends r's batches as events, in groups, until the end of
// the file (io.EOF), an error, or stop. Damaged byte ranges are appended
// to damage, and the reading goes on after them.
func readBatchEvents(r *segment.Reader, o *segmentDumpOptions, groups chan<- []event.SegmentBatch, stop <-chan struct{}, damage *[]error) error {
	d := r.Decoder()
	group := make([]event.SegmentBatch, 0, groupBatches)
	inGroup := 0
	send := func() bool {
		if len(group) == 0 {
			return true
		}
		select {
		case groups <- group:
		case <-stop:
			return false
		}
		group, inGroup = make([]event.SegmentBatch, 0, groupBatches), 0
		return true
	}
	for {
		b, err := r.Next()
		if _, ok := segment.AsDamage(err); ok {
			*damage = append(*damage, err)
			continue
		}
		if err != nil {
			if !send() {
				return errStopped
			}
			return err
		}
		count, err := d.CountRecords(b)
		if err != nil {
			send()
			return fmt.Errorf("%s: position %d: counting records: %w", r.Path(), b.Position, unwrapRecords(err))
		}
		e := segment.BatchEvent(b, count)
		if o.messageIDHeader != "" {
			_, ids, err := d.MessageIDs(b.Data, o.messageIDHeader)
			if err != nil {
				send()
				return fmt.Errorf("%s: position %d: %w", r.Path(), b.Position, unwrapRecords(err))
			}
			e.MessageIDs = ids
		}
		if o.records {
			e.Records = make([]event.SegmentRecord, 0, min(count, 1024))
			for rec, err := range d.Records(b) {
				if err != nil {
					send()
					return fmt.Errorf("%s: position %d: %w", r.Path(), b.Position, unwrapRecords(err))
				}
				e.Records = append(e.Records, segment.RecordEvent(rec, b.Control, o.payload))
			}
			inGroup += len(e.Records)
		}
		group = append(group, e)
		if len(group) == groupBatches || inGroup >= groupRecords {
			if !send() {
				return errStopped
			}
		}
	}
}

// errStopped ends a reader whose writer failed; the writer's error is the
// one reported.
var errStopped = errors.New("stopped")

// unwrapRecords drops the records package's own position prefix from
// errors about a batch whose position the caller prints.
func unwrapRecords(err error) error {
	var re *records.Error
	if errors.As(err, &re) {
		return re.Err
	}
	return err
}

func dumpIndex(stderr io.Writer, w segout.IndexWriter, file string, what segment.Content, quiet bool) error {
	kind := logdir.KindIndex
	if what == segment.TimeIndex {
		kind = logdir.KindTimeIndex
	}
	var werr error
	info, err := segment.ReadIndexAs(file, kind, func(ie segment.IndexEntry) error {
		e := event.IndexEntry{Pos: ie.Pos, Offset: ie.Offset}
		time := ie.Timestamp >= 0 || ie.Position < 0
		if time {
			ts := ie.Timestamp
			e.Timestamp = &ts
		} else {
			p := ie.Position
			e.Position = &p
		}
		if err := w.Write(file, time, &e); err != nil {
			werr = &writeError{err}
			return werr
		}
		return nil
	})
	if werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if !quiet {
		base := fmt.Sprintf("base offset %d", info.BaseOffset)
		if !info.BaseKnown {
			base = "base offset unknown (not in the name): offsets are relative"
		}
		fmt.Fprintf(stderr, "kscope: %s: %v, %s: %d entries in use, %d unused (preallocated)\n",
			output.Escape(file), what, base, info.Entries, info.Unused)
	}
	var problems []string
	if info.NonZeroUnused >= 0 {
		problems = append(problems, fmt.Sprintf("position %d: unused entry is not zeros", info.NonZeroUnused))
	}
	if info.TrailingBytes > 0 {
		problems = append(problems, fmt.Sprintf("%d bytes at the end are less than an entry", info.TrailingBytes))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s", file, strings.Join(problems, "; "))
	}
	return nil
}

type segmentLookupOptions struct {
	position, bytes int64
	format          string
	messageIDHeader string
}

func newSegmentLookupCmd() *cobra.Command {
	var o segmentLookupOptions
	cmd := &cobra.Command{
		Use:   "lookup FILE.log --position P --bytes N",
		Short: "Print the batches overlapping bytes [P, P+N) of a .log file and their message ids",
		Long: `Prints the batches that overlap the byte range [P, P+N) of a .log file, such
as a traced write, with their records' message ids (the values of the
--message-id-header record header). It reads from the nearest .index entry
before P, not from the start of the file. Damage (a bad length, a bad CRC,
a truncated batch) is read past to the next valid batch and reported
(exit 1).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSegmentLookup(cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], &o)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.position, "position", -1, "byte position in the file (required)")
	f.Int64Var(&o.bytes, "bytes", 0, "number of bytes (required)")
	f.StringVar(&o.format, "format", "table", "output format: table, json (JSON Lines) or csv")
	f.StringVar(&o.messageIDHeader, "message-id-header", records.DefaultIDHeader, "record header holding message ids (empty: none)")
	check(f, "position", &o.position, nonNegative)
	check(f, "bytes", &o.bytes, positive)
	check(f, "format", &o.format, oneOf("table", "json", "csv"))
	return cmd
}

func runSegmentLookup(stdout, stderr io.Writer, file string, o *segmentLookupOptions) error {
	if o.position < 0 || o.bytes <= 0 {
		return badInput(fmt.Errorf("--position P (>= 0) and --bytes N (> 0) are required"))
	}
	w, err := segout.NewBatchWriter(stdout, o.format, false, true)
	if err != nil {
		return badInput(err)
	}
	res, lerr := segment.Lookup(file, o.position, o.bytes, o.messageIDHeader, nil)
	for _, m := range res.Matches {
		e := segment.BatchEvent(m.Batch, m.Records)
		e.MessageIDs = m.MessageIDs
		if e.MessageIDs == nil {
			e.MessageIDs = []string{}
		}
		if err := w.Write(file, &e); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing output: %w", err)
	}
	if lerr != nil {
		if isBadInput(lerr) { // printed escaped by Main
			return badInput(lerr)
		}
		return lerr
	}
	// Damage before the range: the batches printed are right, but the
	// file is damaged.
	for i := range res.Damaged {
		fmt.Fprintf(stderr, "kscope: %s: position %d: %s\n", output.Escape(file), res.Damaged[i].Start, output.Escape(res.Damaged[i].Error()))
	}
	if len(res.Damaged) > 0 {
		return fmt.Errorf("%s: %d damaged byte ranges before position %d, read past", file, len(res.Damaged), o.position)
	}
	return nil
}

func newSegmentVerifyCmd() *cobra.Command {
	var quiet bool
	cmd := &cobra.Command{
		Use:   "verify DIR|FILE...",
		Short: "Check log directories, partition directories or segment files; exit 1 on any problem",
		Long: `Checks every batch's CRC and structure, that offsets increase strictly across
batches and across the .log files of a partition, that .index and .timeindex
entries point at real batch positions and offsets, and that
leader-epoch-checkpoint and partition.metadata are readable. Each problem is
printed with its file and position; the exit code is 1 when there is any.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSegmentVerify(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, quiet)
		},
	}
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no summary on stderr")
	return cmd
}

func runSegmentVerify(stdout, stderr io.Writer, paths []string, quiet bool) error {
	if err := distinctInputs(paths); err != nil {
		return err
	}
	rep, err := segment.Verify(paths...)
	if err != nil {
		return badInput(err)
	}
	for i := range rep.Problems {
		if _, err := fmt.Fprintln(stdout, output.Escape(rep.Problems[i].Error())); err != nil {
			return fmt.Errorf("writing output: %w", err)
		}
	}
	if !quiet {
		fmt.Fprintf(stderr, "kscope: %d partitions, %d log files, %d batches, %d index files, %d index entries; %d problems",
			rep.Partitions, rep.LogFiles, rep.Batches, rep.IndexFiles, rep.IndexEntries, len(rep.Problems)+rep.Omitted)
		if rep.Omitted > 0 {
			fmt.Fprintf(stderr, " (%d not printed: more than 100 in one file)", rep.Omitted)
		}
		if rep.Damaged > 0 {
			fmt.Fprintf(stderr, "; %d damaged byte ranges (%d bytes) in .log files", rep.Damaged, rep.DamagedBytes)
		}
		fmt.Fprintf(stderr, "; %d files not checked (.txnindex, .snapshot, in transition, other names), %d missing optional files\n",
			len(rep.Unchecked), len(rep.Missing))
	}
	if !rep.OK() {
		return fmt.Errorf("%d problems found", len(rep.Problems)+rep.Omitted)
	}
	return nil
}
