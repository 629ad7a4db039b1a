// Package report turns a kscope recording, or a capture with an I/O
// trace, into one self-contained HTML page that people look at rather
// than read (`kscope report`): the produce-latency heatmap over time,
// percentiles over time per API, the slowest produce requests with the
// causes explain names for them, the share of each cause, a
// write-latency heatmap per device and the journal commits. The charts
// are SVG drawn here, the styles inline: the page loads nothing from
// anywhere.
//
// The input files are streamed once each (the requests twice: once here,
// once by explain's scan) into fixed-size histograms, so memory is
// bounded by the number of time columns, latency rows, APIs and devices,
// not by the recording's length; explain's own index of writes is what
// it always is.
package report

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/findings"
	"github.com/kscope-dev/kscope/internal/latency"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// The latency range of every heatmap and percentile chart: 100 µs to 30 s,
// log-scaled. Values outside are clamped into the first or last row.
const (
	MinLatencyMs = 0.1
	MaxLatencyMs = 30000
)

// Scale is a log scale of latency buckets from MinLatencyMs to
// MaxLatencyMs with PerDecade buckets per power of ten.
type Scale struct{ PerDecade int }

// Rows is the number of buckets.
func (s Scale) Rows() int {
	return int(math.Ceil(math.Log10(MaxLatencyMs/MinLatencyMs) * float64(s.PerDecade)))
}

// Row is the bucket of a latency in milliseconds, clamped to the range.
func (s Scale) Row(ms float64) int {
	if !(ms > MinLatencyMs) { // also NaN
		return 0
	}
	r := int(math.Floor(math.Log10(ms/MinLatencyMs) * float64(s.PerDecade)))
	return min(max(r, 0), s.Rows()-1)
}

// Lower is the lower bound of row r in milliseconds (Lower(Rows()) is
// the top of the last row).
func (s Scale) Lower(r int) float64 {
	return MinLatencyMs * math.Pow(10, float64(r)/float64(s.PerDecade))
}

// Heatmap counts latencies in time columns and log-scaled latency rows.
// Columns start at Step wide; when there would be more than MaxCols, pairs
// of columns are merged and Step doubles, so that a recording of any
// length ends with at most MaxCols columns.
type Heatmap struct {
	Scale   Scale
	MaxCols int
	Origin  time.Time     // start of column 0
	Step    time.Duration // width of a column
	Cols    [][]int64     // Cols[c][r]
	Total   int64
	MaxMs   float64 // largest latency added
}

// NewHeatmap returns an empty heatmap; origin may be zero (then the first
// event's time, truncated to step, is used).
func NewHeatmap(scale Scale, origin time.Time, step time.Duration, maxCols int) *Heatmap {
	if step <= 0 {
		step = time.Second
	}
	if maxCols < 2 {
		maxCols = 2
	}
	return &Heatmap{Scale: scale, MaxCols: maxCols, Origin: origin, Step: step}
}

// Add counts one latency at time t.
func (h *Heatmap) Add(t time.Time, ms float64) {
	if t.IsZero() {
		return
	}
	if h.Origin.IsZero() {
		h.Origin = t.Truncate(h.Step)
	}
	if t.Before(h.Origin) { // out of order: prepend whole columns
		for int64((h.Origin.Sub(t)+h.Step-1)/h.Step)+int64(len(h.Cols)) > int64(h.MaxCols) {
			h.merge()
		}
		k := int((h.Origin.Sub(t) + h.Step - 1) / h.Step)
		pre := make([][]int64, k, k+len(h.Cols))
		h.Cols = append(pre, h.Cols...)
		h.Origin = h.Origin.Add(-time.Duration(k) * h.Step)
	}
	c := int(t.Sub(h.Origin) / h.Step)
	for c >= h.MaxCols || len(h.Cols) > h.MaxCols {
		h.merge()
		c = int(t.Sub(h.Origin) / h.Step)
	}
	for len(h.Cols) <= c {
		h.Cols = append(h.Cols, nil)
	}
	if h.Cols[c] == nil {
		h.Cols[c] = make([]int64, h.Scale.Rows())
	}
	h.Cols[c][h.Scale.Row(ms)]++
	h.Total++
	h.MaxMs = max(h.MaxMs, ms)
}

// merge halves the columns: pairs counted from the origin become one.
func (h *Heatmap) merge() {
	n := (len(h.Cols) + 1) / 2
	out := make([][]int64, n)
	for i := range n {
		a := h.Cols[2*i]
		var b []int64
		if 2*i+1 < len(h.Cols) {
			b = h.Cols[2*i+1]
		}
		switch {
		case a == nil:
			out[i] = b
		case b != nil:
			for r := range a {
				a[r] += b[r]
			}
			fallthrough
		default:
			out[i] = a
		}
	}
	h.Cols = out
	h.Step *= 2
}

// End is the end of the last column.
func (h *Heatmap) End() time.Time { return h.Origin.Add(time.Duration(len(h.Cols)) * h.Step) }

// MaxCount is the largest cell.
func (h *Heatmap) MaxCount() int64 {
	var m int64
	for _, col := range h.Cols {
		for _, v := range col {
			m = max(m, v)
		}
	}
	return m
}

// Quantile is the q-quantile (0..1) of column c in milliseconds (the
// geometric middle of the bucket it falls in), and false for an empty
// column.
func (h *Heatmap) Quantile(c int, q float64) (float64, bool) {
	col := h.Cols[c]
	var n int64
	for _, v := range col {
		n += v
	}
	if n == 0 {
		return 0, false
	}
	rank := int64(math.Ceil(q * float64(n)))
	rank = max(rank, 1)
	var seen int64
	for r, v := range col {
		seen += v
		if seen >= rank {
			return math.Sqrt(h.Scale.Lower(r) * h.Scale.Lower(r+1)), true
		}
	}
	return h.Scale.Lower(len(col)), true
}

// Options say what to put in the report.
type Options struct {
	// Explain says how explain runs: what makes a request slow (Slow,
	// Percentile), where message ids are read from (LogDirs,
	// MessageIDHeader; none: writes are matched by bytes and time). Its
	// Top is Top.
	Explain explain.Options
	// Top is how many of the slowest explained requests are listed (and
	// the length of the other worst-of lists).
	Top int
	// MaxCols bounds the time columns of every chart (default 200).
	MaxCols int
	// Title is the page's title (default: the recording's host and start).
	Title string
	// AlarmMs is the latency from which slow requests are cause for
	// alarm in the findings (0: findings.DefaultAlarmMs).
	AlarmMs float64
	// Clients and Consumers say how those views are built (the target
	// release, the lag thresholds).
	Clients   clients.Options
	Consumers consumers.Options
}

// Inputs are the files a report is drawn from: a recording's
// (RecordingInputs), or requests decoded from captures and iotrace's
// output. Every file named must exist.
type Inputs struct {
	// Requests is a requests JSON Lines file (kscope requests --format
	// json); "" for none.
	Requests string
	// IO are iotrace JSON Lines files (writes and journal events, mixed
	// or apart); none: no write or journal charts, and no write evidence.
	IO []string
	// LockWaits is a lockwaits.jsonl file, JFR a flight recording of the
	// broker; either (or both) give lock-wait evidence.
	LockWaits string
	JFR       string
	// Use is a use.jsonl file (the host's USE figures); "" for none.
	Use string
	// Meta is the recording's meta.json; nil for captures.
	Meta *recording.Meta
	// Dir is the recording directory, Captures the capture files the
	// requests were decoded from: what the page says it shows.
	Dir      string
	Captures []string
	// Start and End span the data when there is no meta.json (a
	// capture's first and last packet): the charts' common time axis.
	Start, End time.Time
}

// Data is everything the page shows, aggregated.
type Data struct {
	Title    string
	Dir      string
	Captures []string // the capture files, when not a recording
	IOFiles  []string // the I/O trace files, when not a recording
	Meta     *recording.Meta

	Requests    int64 // request lines read
	Produce     *Heatmap
	APIs        []APISeries // by request count, most first
	Summary     *explain.Summary
	Slowest     []*explain.Finding // slowest first
	Devices     []DeviceSeries     // by device name
	Commits     []event.JournalCommit
	CommitsSeen int64
	Use         *UsePanel // nil without use.jsonl
	// Latency is the produce latency's distribution; Findings what
	// the findings' checks made of it all, ranked (package findings).
	Latency  findings.Latency
	Findings []findings.Finding
	// Clients and Consumers are the views of the requests (nil without
	// them).
	Clients    *clients.Report
	Consumers  *consumers.Report
	AlarmMs    float64
	Start, End time.Time
	// LeftOut says, one line each, what was left out of which input: a
	// last line cut short by a crash, lines whose values cannot be true
	// (none of the charts or statistics has them).
	LeftOut []string
}

// NoIOTrace is true for a report of captures without an I/O trace: it
// has no write evidence, so explain leaves most requests unexplained.
func (d *Data) NoIOTrace() bool { return d.Dir == "" && len(d.IOFiles) == 0 }

// APISeries is one API's latencies over time (a fine heatmap, for
// percentiles).
type APISeries struct {
	API  string
	Hist *Heatmap
}

// DeviceSeries is one device's writes (and fsyncs), and its journal
// commits, over time.
type DeviceSeries struct {
	Dev     string
	Writes  *Heatmap
	Commits *Heatmap
}

// Scales of the heatmaps and of the percentile charts.
var (
	HeatScale       = Scale{PerDecade: 8}
	PercentileScale = Scale{PerDecade: 40}
)

// maxAPIs bounds the APIs tracked (Kafka has fewer; a damaged capture
// could invent more).
const maxAPIs = 64

// RecordingInputs are the files of the recording in dir that exist (a
// recording without eBPF has no writes.jsonl, one without --jfr no lock
// waits). Lock waits come from lockwaits.jsonl, else from broker.jfr, as
// explain reads them.
func RecordingInputs(dir string) (Inputs, error) {
	meta, err := recording.ReadMeta(dir)
	if err != nil {
		return Inputs{}, fmt.Errorf("%s is not a kscope recording: %w", dir, err)
	}
	in := Inputs{Meta: meta, Dir: dir}
	if p := filepath.Join(dir, recording.RequestsFile); fileExists(p) {
		in.Requests = p
	}
	for _, name := range []string{recording.WritesFile, recording.JournalFile, recording.SchedFile} {
		if p := filepath.Join(dir, name); fileExists(p) {
			in.IO = append(in.IO, p)
		}
	}
	if p := filepath.Join(dir, recording.LockWaitsFile); fileExists(p) {
		in.LockWaits = p
	} else if p := filepath.Join(dir, recording.JFRFile); fileExists(p) {
		in.JFR = p
	}
	if p := filepath.Join(dir, recording.UseFile); fileExists(p) {
		in.Use = p
	}
	return in, nil
}

// Build reads the recording in dir and aggregates it.
func Build(dir string, o Options) (*Data, error) {
	in, err := RecordingInputs(dir)
	if err != nil {
		return nil, err
	}
	return BuildFrom(in, o)
}

// BuildFrom reads the inputs, each file streamed once (the requests
// twice: here and by explain's scan), and aggregates them.
func BuildFrom(in Inputs, o Options) (*Data, error) {
	if o.Top <= 0 {
		o.Top = 50
	}
	if o.MaxCols <= 0 {
		o.MaxCols = 200
	}
	b := newBuilder(in, o)
	d := b.d
	if in.Requests != "" {
		if err := b.readRequests(in.Requests); err != nil {
			return nil, err
		}
		if err := b.readViews(in.Requests); err != nil {
			return nil, err
		}
	}
	idx := explain.NewIndex()
	if err := b.readIO(idx, in.IO); err != nil {
		return nil, err
	}
	// explain reads the lock waits, after the I/O and before use.jsonl:
	// the files' order in the tally of what was left out.
	if in.Requests != "" {
		if err := b.explain(idx, in); err != nil {
			return nil, err
		}
		if err := b.explainRebalances(idx, in); err != nil {
			return nil, err
		}
	}
	if in.Use != "" {
		if err := b.readUse(in.Use); err != nil {
			return nil, err
		}
	}
	d.span()
	d.LeftOut = b.rd.Tally.Warnings()
	d.Latency = b.latency()
	d.AlarmMs = cmp.Or(b.o.AlarmMs, findings.DefaultAlarmMs)
	d.Findings = findings.Collect(b.evidence())
	return d, nil
}

// latency is the produce latency's distribution, from the requests read.
func (b *builder) latency() findings.Latency {
	g := b.produce
	if g == nil || g.Count == 0 {
		return findings.Latency{}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return findings.Latency{Requests: g.Count, P50: ms(g.Quantile(50)), P99: ms(g.Quantile(99)), P999: ms(g.Quantile(99.9)), Max: ms(g.Max())}
}

// evidence is what the findings' checks look at.
func (b *builder) evidence() *findings.Evidence {
	d := b.d
	e := &findings.Evidence{Dir: d.Dir, Meta: d.Meta, Summary: d.Summary, Slowest: d.Slowest, Latency: d.Latency, AlarmMs: b.o.AlarmMs,
		Clients: d.Clients, Consumers: d.Consumers}
	if u := d.Use; u != nil {
		e.Use = &findings.Use{Intervals: u.Samples}
		for _, f := range u.Findings {
			e.Use.Verdicts = append(e.Use.Verdicts, findings.UseVerdict{Resource: f.Resource, Kind: f.Kind, Intervals: f.Intervals, Reason: f.Reason})
		}
	}
	return e
}

// builder aggregates one report: the data, the time axis all its charts
// share, and how its files are read: every reader leaves out the same
// impossible values, counted once.
type builder struct {
	d      *Data
	o      Options
	origin time.Time
	step   time.Duration
	rd     recording.Reader
	// ioRd reads the I/O files: a recording's are regular files, but
	// --io beside captures may be a pipe, read once.
	ioRd recording.Reader
	// produce is the produce latencies' distribution.
	produce *latency.Group
}

func newBuilder(in Inputs, o Options) *builder {
	d := &Data{Dir: in.Dir, Meta: in.Meta, Title: o.Title}
	if in.Dir == "" {
		d.Captures, d.IOFiles = in.Captures, in.IO
	}
	if d.Title == "" {
		d.Title = defaultTitle(in)
	}
	b := &builder{d: d, o: o, step: time.Second, rd: recording.Reader{Tally: &recording.Tally{}}}
	if in.Meta != nil {
		b.rd.Window = in.Meta.Window()
	}
	b.ioRd = b.rd
	if in.Dir == "" {
		b.ioRd.Mode = safefile.Stream
	}
	// One time axis for all charts when the span is known (meta.json's,
	// or the capture's): a step that gives about MaxCols columns over it.
	// Without one the heatmaps start at the first event and merge
	// columns as they grow.
	start, end := in.Start, in.End
	if m := in.Meta; m != nil {
		start, end = m.Start, m.End
	}
	b.origin = start
	if !start.IsZero() && end.After(start) {
		b.step = max(end.Sub(start)/time.Duration(o.MaxCols), time.Millisecond)
		b.step = b.step.Round(time.Millisecond) + time.Millisecond
	}
	d.Produce = b.heatmap(HeatScale)
	b.produce = latency.NewGroup("produce")
	return b
}

// defaultTitle names the recording's host, else the capture files.
func defaultTitle(in Inputs) string {
	t := "kscope report"
	switch {
	case in.Meta != nil && in.Meta.Host != "":
		t += ": " + in.Meta.Host
	case len(in.Captures) > 0:
		names := make([]string, len(in.Captures))
		for i, c := range in.Captures {
			names[i] = filepath.Base(c)
		}
		t += ": " + strings.Join(names, ", ")
	}
	return t
}

func (b *builder) heatmap(s Scale) *Heatmap { return NewHeatmap(s, b.origin, b.step, b.o.MaxCols) }

// readViews builds the clients and consumers views of the requests. The
// lines left out are those readRequests left out, and counted there:
// this second reading counts them in a tally of its own.
func (b *builder) readViews(path string) error {
	rd := b.rd
	rd.Tally = &recording.Tally{}
	cl, co := clients.New(b.o.Clients), consumers.New(b.o.Consumers)
	err := rd.Requests(path, func(r *event.Request) {
		cl.Add(r)
		co.Add(r)
	})
	if err != nil {
		return fmt.Errorf("reading requests: %w", err)
	}
	b.d.Clients, b.d.Consumers = cl.Report(), co.Report()
	return nil
}

// readRequests fills the produce heatmap and every API's series.
func (b *builder) readRequests(path string) error {
	d := b.d
	apis := map[string]*APISeries{}
	var req struct {
		Arrival   time.Time `json:"arrival"`
		End       time.Time `json:"end"`
		LatencyMs float64   `json:"latency_ms"`
		API       string    `json:"api"`
		APIKey    int16     `json:"api_key"`
		Answered  bool      `json:"answered"`
		ClockStep bool      `json:"clock_step"`
	}
	err := b.rd.Lines(path, func(line []byte, _ int64) error {
		req.Arrival, req.End, req.LatencyMs, req.API, req.APIKey, req.Answered, req.ClockStep = time.Time{}, time.Time{}, 0, "", -1, false, false
		if err := json.Unmarshal(line, &req); err != nil {
			return err
		}
		// A clock step's times are no latency, and not an impossible
		// value either: the capture's footer already counted it.
		if !req.ClockStep {
			if err := b.rd.Window.CheckRequest(req.Arrival, req.End, req.LatencyMs, req.Answered); err != nil {
				return err
			}
		}
		d.Requests++
		if !req.Answered || req.ClockStep {
			return nil
		}
		if req.APIKey == 0 {
			d.Produce.Add(req.Arrival, req.LatencyMs)
			b.produce.Record(time.Duration(req.LatencyMs * float64(time.Millisecond)))
		}
		s := apis[req.API]
		if s == nil {
			if len(apis) >= maxAPIs {
				return nil
			}
			s = &APISeries{API: req.API, Hist: b.heatmap(PercentileScale)}
			apis[req.API] = s
		}
		s.Hist.Add(req.Arrival, req.LatencyMs)
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading requests: %w", err)
	}
	for _, s := range apis {
		d.APIs = append(d.APIs, *s)
	}
	slices.SortFunc(d.APIs, func(a, b APISeries) int {
		return cmp.Or(cmp.Compare(b.Hist.Total, a.Hist.Total), cmp.Compare(a.API, b.API))
	})
	return nil
}

// readIO fills the per-device heatmaps, the slowest commits and
// explain's index, in one pass over each file.
func (b *builder) readIO(idx *explain.Index, paths []string) error {
	d := b.d
	devs := map[string]*DeviceSeries{}
	dev := func(name string) *DeviceSeries {
		s := devs[name]
		if s == nil {
			s = &DeviceSeries{Dev: name, Writes: b.heatmap(HeatScale), Commits: b.heatmap(HeatScale)}
			devs[name] = s
		}
		return s
	}
	// Everything goes to explain's index; writes and commits also to
	// the heatmaps.
	h := idx.Handlers()
	h.Write = func(w *event.Write) error {
		idx.AddWrite(w)
		dev(w.Dev).Writes.Add(w.Start, w.LatencyMs)
		return nil
	}
	h.Commit = func(c *event.JournalCommit) error {
		idx.AddCommit(c)
		dev(c.Dev).Commits.Add(c.Start, c.LatencyMs)
		d.CommitsSeen++
		d.Commits = keepSlowest(d.Commits, *c, b.o.Top)
		return nil
	}
	for _, p := range paths {
		if err := b.ioRd.ReadIO(p, h); err != nil {
			return fmt.Errorf("reading the I/O trace: %w", err)
		}
	}
	for _, s := range devs {
		d.Devices = append(d.Devices, *s)
	}
	slices.SortFunc(d.Devices, func(a, b DeviceSeries) int { return cmp.Compare(a.Dev, b.Dev) })
	slices.SortFunc(d.Commits, func(a, b event.JournalCommit) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	return nil
}

// explain runs explain over the requests, with the I/O evidence readIO
// put in idx and the inputs' lock waits, read by b.rd as every other
// file (what it leaves out is counted once, in b.rd's tally, and told by
// the caller from Data.LeftOut): the slowest Top findings, and
// the summary.
func (b *builder) explain(idx *explain.Index, in Inputs) error {
	d := b.d
	opts := b.o.Explain
	opts.Top = b.o.Top
	out := explain.OutputFuncs{
		OnFinding: func(f *explain.Finding) error {
			d.Slowest = keepSlowestFinding(d.Slowest, f, b.o.Top)
			return nil
		},
		OnSummary: func(s *explain.Summary) error { d.Summary = s; return nil },
	}
	input := explain.Input{Requests: in.Requests, Index: idx, LockWaits: in.LockWaits, JFR: in.JFR, Meta: in.Meta, Name: in.Dir, Reader: &b.rd}
	if err := explain.Run(context.Background(), []explain.Input{input}, opts, out); err != nil {
		return err
	}
	slices.SortFunc(d.Slowest, func(a, b *explain.Finding) int { return cmp.Compare(b.LatencyMs, a.LatencyMs) })
	return nil
}

// explainRebalances gives the consumers view's slow rebalances the
// coordinator's causes, from idx as explain filled it (its lock waits
// included: they are not read again). What the requests' reading leaves
// out was counted already: this one counts in a tally of its own.
func (b *builder) explainRebalances(idx *explain.Index, in Inputs) error {
	if b.d.Consumers == nil {
		return nil
	}
	rd := b.rd
	rd.Tally = &recording.Tally{}
	input := explain.Input{Requests: in.Requests, Index: idx, Meta: in.Meta, Name: in.Dir, Reader: &rd}
	return ExplainRebalances(context.Background(), input, b.o.Explain, b.d.Consumers, b.o.Consumers)
}

// span sets the common time axis: everything drawn.
func (d *Data) span() {
	add := func(h *Heatmap) {
		if len(h.Cols) == 0 {
			return
		}
		if d.Start.IsZero() || h.Origin.Before(d.Start) {
			d.Start = h.Origin
		}
		if h.End().After(d.End) {
			d.End = h.End()
		}
	}
	add(d.Produce)
	for _, s := range d.APIs {
		add(s.Hist)
	}
	for _, s := range d.Devices {
		add(s.Writes)
		add(s.Commits)
	}
	if d.Use != nil {
		for _, s := range d.Use.spanSeries() {
			if len(s.Vals) == 0 {
				continue
			}
			if d.Start.IsZero() || s.Origin.Before(d.Start) {
				d.Start = s.Origin
			}
			if s.End().After(d.End) {
				d.End = s.End()
			}
		}
	}
}

// keepSlowest keeps the n slowest commits (unordered; n is small, so a
// linear scan for the fastest is fine).
func keepSlowest(cs []event.JournalCommit, c event.JournalCommit, n int) []event.JournalCommit {
	if len(cs) < n {
		return append(cs, c)
	}
	i := 0
	for j := range cs {
		if cs[j].LatencyMs < cs[i].LatencyMs {
			i = j
		}
	}
	if c.LatencyMs > cs[i].LatencyMs {
		cs[i] = c
	}
	return cs
}

func keepSlowestFinding(fs []*explain.Finding, f *explain.Finding, n int) []*explain.Finding {
	if len(fs) < n {
		return append(fs, f)
	}
	i := 0
	for j := range fs {
		if fs[j].LatencyMs < fs[i].LatencyMs {
			i = j
		}
	}
	if f.LatencyMs > fs[i].LatencyMs {
		fs[i] = f
	}
	return fs
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
