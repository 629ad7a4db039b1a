package explain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// Input is one broker's evidence for Run: a recording directory; or a
// requests file with an I/O trace, or with an index a caller filled from
// one; or a request held in memory with the evidence around it.
type Input struct {
	// Dir is a recording made by kscope record, or a segment of an
	// agent's slow log: its requests, I/O trace, lock waits and meta.json.
	Dir string
	// Requests is a requests JSON Lines file (a recording's, kscope
	// requests --format json output, captures decoded), without Dir.
	Requests string
	// IO are iotrace JSON Lines files (kscope iotrace --format json
	// output), read into the index unless Index is given.
	IO []string
	// Index holds the evidence already, for a caller that reads the I/O
	// trace for its own ends too (IO is then not read); with Held, the
	// events around the request.
	Index *Index
	// LockWaits is a lockwaits.jsonl file, JFR a flight recording of the
	// broker: their lock waits go to the index. With Dir, JFR is read
	// instead of the recording's broker.jfr (which is read only when it
	// has no lockwaits.jsonl) and besides its lockwaits.jsonl.
	LockWaits, JFR string
	// Meta is the recording's meta.json when there is no Dir (nil for
	// captures): its slow-log threshold, log dirs and missing evidence.
	Meta *recording.Meta
	// Name is what messages call the input (default: Dir, else
	// Requests).
	Name string
	// Held is a slow request held in memory (an agent's, as it completes),
	// explained whatever its latency.
	Held *HeldRequest
	// Reader, with Requests, is the caller's reader of the input's files
	// (its requests, IO and lock waits; IO is read as a stream either
	// way): what it leaves out is counted in its Tally, which the caller
	// has read other files with and tells of itself. Run then adds what
	// was left out to the summary's missing evidence, but does not note
	// it. Nil: Run reads with a reader of its own (Meta's window; a
	// recording's with Dir) and notes each line it left out as a warning.
	Reader *recording.Reader
}

// HeldRequest is a slow request held in memory, with the requests ahead
// of it on its connection (oldest first, explained for context) and the
// followers' fetches around it (see ExplainOne).
type HeldRequest struct {
	Request *event.Request
	Before  []*event.Request
	Fetches []*event.Request
}

// Options say how Run explains.
type Options struct {
	// Config tunes the classifier; its Slow, Percentile and
	// PercentileGiven are the user's say on what is slow
	// (DecideThreshold).
	Config
	// Request, when set, is the one request to explain, whatever its
	// latency (one input only).
	Request *RequestID
	// Top bounds the summaries' worst-of lists (0: no bound).
	Top int
	// API is what to explain: APIProduce ("" too) or APIFetch, the
	// consumer fetches slow beyond their purgatory (one input only).
	API string
	// LogDirs are the broker's log dirs, where the segment files are
	// (none: meta.json's).
	LogDirs []string
	// MessageIDHeader is the record header holding message ids, read from
	// the segment files to match writes to requests exactly; "": the
	// segment files are not read (writes are matched by bytes and time).
	MessageIDHeader string
	// Note is told what Run read and what it could not do (the lock waits
	// of a JFR file, a recording whose clock could not be aligned with
	// the others'); Warn of a doubtful choice of the caller's (a
	// percentile of an agent's slow log). Either may be nil.
	Note, Warn func(msg string)
}

// Output takes what Run finds, as it comes.
type Output interface {
	Finding(*Finding) error
	// Summary is called once per input, after its findings.
	Summary(*Summary) error
}

// ClusterOutput is an Output that, with several inputs, is told their
// clocks first and where each broker's findings begin.
type ClusterOutput interface {
	Output
	Clocks(*Cluster) error
	Broker(nodeID int32, dir string) error
}

// OutputFuncs is an Output of two functions; a nil one takes nothing.
type OutputFuncs struct {
	OnFinding func(*Finding) error
	OnSummary func(*Summary) error
}

func (o OutputFuncs) Finding(f *Finding) error { return call(o.OnFinding, f) }
func (o OutputFuncs) Summary(s *Summary) error { return call(o.OnSummary, s) }

func call[T any](fn func(T) error, v T) error {
	if fn == nil {
		return nil
	}
	return fn(v)
}

// OutputError is an error of the Output's: Run read its inputs but could
// not hand on what it found.
type OutputError struct{ Err error }

func (e *OutputError) Error() string { return "writing output: " + e.Err.Error() }
func (e *OutputError) Unwrap() error { return e.Err }

// Run explains the slow produce requests of the inputs, handing out each
// finding and then each input's summary. Several inputs are several
// brokers of one cluster recorded at the same time: their clocks are
// aligned from the replica fetches both ends captured, and each broker's
// requests are explained with the others as its peers, so that a wait
// for a follower names the follower's cause. An error reading the inputs
// is returned as it is, one of out's as an *OutputError.
func Run(ctx context.Context, inputs []Input, opts Options, out Output) error {
	switch {
	case len(inputs) == 0:
		return errors.New("nothing to explain")
	case opts.API != "" && !slices.Contains(APIs(), opts.API):
		return fmt.Errorf("explain explains %s requests, not %q", strings.Join(APIs(), " or "), output.Escape(opts.API))
	case (opts.API == APIFetch || opts.API == APIGroup) && (len(inputs) > 1 || inputs[0].Held != nil):
		return fmt.Errorf("%s requests are explained from one recording or requests file at a time", opts.API)
	case len(inputs) > 1:
		return runCluster(ctx, inputs, opts, out)
	case inputs[0].Held != nil:
		return runHeld(ctx, inputs[0], opts, out)
	}
	rec, err := load(inputs[0], opts)
	if err != nil {
		return err
	}
	sum, err := explainRecording(ctx, rec, opts, nil, out)
	if err != nil {
		return err
	}
	return handOn(out.Summary(sum))
}

// runCluster explains several brokers' recordings together.
func runCluster(ctx context.Context, inputs []Input, opts Options, out Output) error {
	if opts.Request != nil {
		return errors.New("one request is explained from one recording, not several")
	}
	recs := make([]*loaded, len(inputs))
	for i, in := range inputs {
		rec, err := load(in, opts)
		if err != nil {
			return err
		}
		recs[i] = rec
	}
	cl, err := NewCluster(recordings(recs))
	if err != nil {
		return err
	}
	co, _ := out.(ClusterOutput)
	if co != nil {
		if err := co.Clocks(cl); err != nil {
			return &OutputError{err}
		}
	}
	for i, rec := range recs {
		if !cl.Aligned[i] {
			opts.note("warning: %s (broker %d) shares no replica fetch with the others: its clock is not aligned, its followers are not followed", output.Escape(rec.Dir), rec.NodeID)
		}
		if co != nil {
			if err := co.Broker(rec.NodeID, rec.Dir); err != nil {
				return &OutputError{err}
			}
		}
		sum, err := explainRecording(ctx, rec, opts, cl.Peers(i), out)
		if err != nil {
			return err
		}
		id := rec.NodeID
		sum.NodeID, sum.Clock = &id, cl.Shift(i)
		if err := handOn(out.Summary(sum)); err != nil {
			return err
		}
	}
	return nil
}

// runHeld explains a request held in memory, whatever its latency, from
// the events in its input's index.
func runHeld(ctx context.Context, in Input, opts Options, out Output) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	h := in.Held
	e := New(opts.Config, in.Index, nil)
	e.useFetches(h.Fetches)
	if err := handOn(out.Finding(e.explainHeld(h.Before, h.Request))); err != nil {
		return err
	}
	th, _ := DecideThreshold(opts.Config, nil, []float64{h.Request.LatencyMs})
	return handOn(out.Summary(e.Summary(1, th.Latency, th.From, opts.Top)))
}

// loaded is an input read: its recording (or what stands for one), and
// what messages call it.
type loaded struct {
	*Recording
	name string
	// tally counts what the reader left out of the input's files (nil:
	// nothing read from files).
	tally *recording.Tally
}

func recordings(ls []*loaded) []*Recording {
	recs := make([]*Recording, len(ls))
	for i, l := range ls {
		recs[i] = l.Recording
	}
	return recs
}

// load reads an input: its requests scanned, its evidence indexed with
// the lock waits of its JFR file.
func load(in Input, opts Options) (*loaded, error) {
	var (
		rec *Recording
		err error
	)
	switch {
	case in.Dir != "" && in.Reader != nil:
		err = errors.New("a recording directory is read by its own reader, within its window: give its requests file to read with another")
	case in.Dir != "":
		rec, err = LoadRecording(in.Dir, opts.Request)
	case in.Requests != "":
		rec, err = loadFiles(in, opts.Request)
	default:
		err = errors.New("an input is a recording directory, a requests file or a request held in memory")
	}
	if err != nil {
		return nil, err
	}
	l := &loaded{Recording: rec, name: in.Name, tally: rec.Tally}
	if in.Reader == nil {
		// Run's own reader: what it left out is told here, the caller's
		// tells of itself.
		for _, w := range l.tally.Warnings() {
			opts.note("warning: %s", w)
		}
	}
	if l.name == "" {
		l.name = in.Dir
	}
	if l.name == "" {
		l.name = in.Requests
	}
	if in.JFR != "" {
		rec.JFR = in.JFR
	}
	if err := l.readJFR(opts); err != nil {
		return nil, err
	}
	return l, nil
}

// loadFiles reads a requests file with its I/O trace (unless the input's
// index holds it) and lock waits, the requests scanned while the rest
// loads, as LoadRecording does a recording's: with the input's reader as
// it is, else with one that leaves out what cannot be true (within
// Meta's window) and counts it in the recording's Tally.
func loadFiles(in Input, only *RequestID) (*Recording, error) {
	rec := &Recording{Meta: in.Meta, Index: in.Index, NodeID: -1}
	if rec.Index == nil {
		rec.Index = NewIndex()
	}
	rd := recording.Reader{Tally: &recording.Tally{}}
	if in.Reader != nil {
		rd = *in.Reader
	} else if in.Meta != nil {
		rd.Window = in.Meta.Window()
	}
	rec.Tally = rd.Tally
	var scanErr error
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		rec.Scan, scanErr = ScanRequestsWith(rd, in.Requests, only)
	}()
	var err error
	if in.Index == nil {
		// --io may be a pipe: it is read once.
		ioRd := rd
		ioRd.Mode = safefile.Stream
		err = LoadIOWith(ioRd, rec.Index, in.IO...)
	}
	if err == nil && in.LockWaits != "" {
		if err = LoadLockWaitsWith(rd, rec.Index, in.LockWaits); err != nil {
			err = fmt.Errorf("reading lock waits: %w", err)
		}
	}
	<-scanned
	if err = errors.Join(err, scanErr); err != nil {
		return nil, err
	}
	if rec.Meta != nil && rec.Meta.Broker.NodeID != nil {
		rec.NodeID = *rec.Meta.Broker.NodeID
	} else if id, ok := rec.Scan.NodeID(); ok {
		rec.NodeID = id
	}
	return rec, nil
}

// readJFR adds the lock waits of the recording's JFR file, if any, to its
// index.
func (l *loaded) readJFR(opts Options) error {
	if l.JFR == "" {
		return nil
	}
	st, err := jfr.ReadLockWaits(l.JFR, func(w *event.LockWait) error { l.Index.AddLockWait(w); return nil })
	if err != nil {
		return fmt.Errorf("reading lock waits: %w", err)
	}
	opts.note("%s: %d lock waits", output.Escape(l.JFR), st.LockWaits)
	return nil
}

// explainRecording explains one loaded input's slow requests (peers: the
// other brokers', in a cluster) into out, and returns its summary.
func explainRecording(ctx context.Context, l *loaded, opts Options, peers []*Peer, out Output) (*Summary, error) {
	th, warning := DecideThreshold(opts.Config, l.slowLog(), l.Scan.Latencies())
	if warning != "" && opts.API != APIFetch && opts.API != APIGroup {
		opts.warn("%s is %s", output.Escape(l.name), warning)
	}
	e := New(opts.Config, l.Index, l.idLookup(opts))
	if peers != nil {
		e.SetPeers(peers)
	}
	var outErr error
	emit := func(f *Finding) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		outErr = out.Finding(f)
		return outErr
	}
	var sum *Summary
	var err error
	switch opts.API {
	case APIFetch:
		// The threshold is the fetches' own, on their abnormal part.
		sum, err = e.runFetches(l.fetchReader(), l.Scan, RunOptions{Top: opts.Top}, emit)
	case APIGroup:
		// The group requests' own, on the coordinator's own part.
		sum, err = e.runGroups(l.fetchReader(), l.Scan, RunOptions{Top: opts.Top}, emit)
	default:
		sum, err = e.Run(l.Scan, RunOptions{Top: opts.Top, Threshold: &th}, emit)
	}
	if outErr != nil {
		return nil, &OutputError{outErr}
	}
	if err != nil {
		return nil, err
	}
	if l.Meta != nil {
		sum.MissingEvidence = l.Meta.MissingEvidence()
	}
	sum.MissingEvidence = append(sum.MissingEvidence, l.tally.Warnings()...)
	return sum, nil
}

// fetchReader reads the requests file a second time for the fetches:
// within the recording's window, what it leaves out counted apart (the
// first pass counted it already).
func (l *loaded) fetchReader() recording.Reader {
	rd := recording.Reader{Tally: &recording.Tally{}}
	if l.Meta != nil {
		rd.Window = l.Meta.Window()
	}
	return rd
}

// slowLog is the recording's slow-log header: set when it is an agent's.
func (l *loaded) slowLog() *recording.SlowLog {
	if l.Meta == nil {
		return nil
	}
	return l.Meta.SlowLog
}

// idLookup reads writes' message ids from the segment files under the
// log dirs (the options', else the recording's), unless there is no
// header to read or nowhere to look.
func (l *loaded) idLookup(opts Options) IDLookup {
	dirs := opts.LogDirs
	if len(dirs) == 0 && l.Meta != nil {
		dirs = l.LogDirs()
	}
	if opts.MessageIDHeader == "" || len(dirs) == 0 {
		return nil
	}
	return SegmentLookup(dirs, opts.MessageIDHeader)
}

// handOn turns an error of the Output's into an *OutputError.
func handOn(err error) error {
	if err != nil {
		return &OutputError{err}
	}
	return nil
}

func (o Options) note(format string, args ...any) {
	if o.Note != nil {
		o.Note(fmt.Sprintf(format, args...))
	}
}

func (o Options) warn(format string, args ...any) {
	if o.Warn != nil {
		o.Warn(fmt.Sprintf(format, args...))
	}
}
