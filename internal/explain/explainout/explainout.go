// Package explainout writes kscope explain's findings: the joined table of
// slow requests and the writes behind them, JSON Lines, a request's
// timeline, and the summary.
package explainout

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/grouphold"

	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/output"
)

// Writer writes findings as they come, then the summary. With several
// brokers' recordings: first the clocks, then for each broker its header,
// findings and summary.
type Writer interface {
	Clocks(c *explain.Cluster) error
	Broker(nodeID int32, dir string) error
	Finding(f *explain.Finding) error
	Summary(s *explain.Summary) error
	Flush() error
}

// NewWriter returns a writer for "table" or "json". rows false writes only
// the summary.
func NewWriter(w io.Writer, format string, rows bool) (Writer, error) {
	switch format {
	case "table":
		return &tableWriter{out: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0), rows: rows}, nil
	case "json":
		return &jsonWriter{j: output.NewJSONLines(w), rows: rows}, nil
	}
	return nil, output.UnknownFormat(format)
}

const clock = "15:04:05.000"

var header = []string{"START TIME", "END TIME", "LATENCY", "MESSAGE_ID", "FILE", "TOPIC", "PARTITION", "BYTES", "OFF_KB", "CAUSE", "CLIENT/CORR"}

type tableWriter struct {
	out    io.Writer
	tw     *tabwriter.Writer
	rows   bool
	n      int
	header bool
}

// Finding writes one row per partition of the request: the request's
// times and message id, and the write the cause rests on (its own, or the
// one it waited for).
func (t *tableWriter) Finding(f *explain.Finding) error {
	if !t.rows {
		return nil
	}
	if !t.header {
		fmt.Fprintln(t.tw, strings.Join(header, "\t"))
		t.header = true
	}
	cause := f.Cause
	if f.Root != "" {
		cause += "/" + f.Root
	}
	if f.Follower != nil {
		cause += fmt.Sprintf(" (broker %d: %s)", *f.Follower, f.FollowerCause)
	}
	for _, p := range f.Partitions {
		id := "-"
		if len(p.MessageIDs) > 0 {
			id = output.Escape(p.MessageIDs[0])
			if n := len(p.MessageIDs) - 1 + p.MoreMessageIDs; n > 0 {
				id += fmt.Sprintf(" (+%d)", n)
			}
		}
		file, bytes, off := "-", strconv.Itoa(p.Bytes), "-"
		if w := causeWrite(f, &p); w != nil {
			file, off = w.File, strconv.FormatInt(w.Offset/1024, 10)
		}
		fmt.Fprintf(t.tw, "%s\t%s\t%.0f ms\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s/%d\n",
			f.Arrival.Local().Format(clock), f.End.Local().Format(clock), f.LatencyMs, id, output.Escape(file),
			output.Escape(p.Topic), p.Partition, bytes, off, cause, output.Escape(f.Client), f.CorrelationID)
	}
	t.n++
	if t.n%256 == 0 {
		return t.tw.Flush()
	}
	return nil
}

// causeWrite is the write a partition's row shows: the one the cause
// rests on, else the request's own.
func causeWrite(f *explain.Finding, p *explain.PartitionEvidence) *explain.WriteEvidence {
	if f.Cause == explain.CauseLockWait && len(p.Blocking) > 0 {
		longest := &p.Blocking[0]
		for i := range p.Blocking {
			if p.Blocking[i].LatencyMs > longest.LatencyMs {
				longest = &p.Blocking[i]
			}
		}
		return longest
	}
	return p.Write
}

func (t *tableWriter) Summary(s *explain.Summary) error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	if t.rows && t.header {
		fmt.Fprintln(t.out)
	}
	return WriteSummaryTable(t.out, s)
}

func (t *tableWriter) Flush() error { return t.tw.Flush() }

// Clocks prints each recording's clock against the first one's.
func (t *tableWriter) Clocks(c *explain.Cluster) error {
	fmt.Fprintln(t.out, "CLOCKS (aligned from the replica fetches both brokers captured)")
	fmt.Fprintln(t.tw, "BROKER\tRECORDING\tOFFSET\tERROR BOUND\tEXCHANGES\tAGREEING")
	for i, r := range c.Recordings {
		switch {
		case i == 0:
			fmt.Fprintf(t.tw, "%d\t%s\treference\t\t\t\n", r.NodeID, output.Escape(r.Dir))
		case !c.Aligned[i]:
			fmt.Fprintf(t.tw, "%d\t%s\tnot aligned (no replica fetch in common)\t\t\t\n", r.NodeID, output.Escape(r.Dir))
		default:
			est := c.Clocks[i]
			fmt.Fprintf(t.tw, "%d\t%s\t%+.3f ms\t± %.3f ms\t%d\t%d\n", r.NodeID, output.Escape(r.Dir), float64(est.OffsetNs)/1e6, float64(est.ErrorNs)/1e6, est.Exchanges, est.Agreeing)
		}
	}
	if err := t.tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(t.out)
	return nil
}

// Broker starts one broker's findings.
func (t *tableWriter) Broker(nodeID int32, dir string) error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(t.out, "== broker %d (%s) ==\n", nodeID, output.Escape(dir))
	t.header = false
	return nil
}

// WriteSummaryTable prints the summary: what was judged and on what
// evidence, then the tables (causes, followers, stalls, worst partitions,
// devices, slow appends and journal commits), each only when it has rows.
func WriteSummaryTable(w io.Writer, s *explain.Summary) error {
	writeSummaryHead(w, s)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, table := range []func(io.Writer, *tabwriter.Writer, *explain.Summary) error{
		writeCauses,
		writeFollowers,
		writeStalls,
		writeWorstPartitions,
		writeWorstDevices,
		writeSlowAppends,
		writeWorstCommits,
	} {
		if err := table(w, tw, s); err != nil {
			return err
		}
	}
	if s.IDLookupErrors > 0 {
		fmt.Fprintf(w, "\n%d of %d segment lookups failed (matched by bytes and time instead); first: %s\n",
			s.IDLookupErrors, s.IDLookups, output.Escape(s.FirstLookupError))
	}
	return nil
}

// writeSummaryHead prints what was judged (the slow requests and their
// threshold) and the evidence there was and was not, then a blank line.
func writeSummaryHead(w io.Writer, s *explain.Summary) {
	switch s.API {
	case explain.APIFetch:
		fmt.Fprintf(w, "%d answered consumer fetches; slow beyond their purgatory: >= %.1f ms (%s): %d fetches, %.1f s of latency\n",
			s.FetchRequests, s.ThresholdMs, s.ThresholdFrom, s.Slow, s.SlowLatencyMs/1000)
		fmt.Fprintf(w, "reads from disk: %d runs of pages added to the page cache traced\n", s.PageCacheRuns)
	case explain.APIGroup:
		fmt.Fprintf(w, "%d answered group coordinator requests; slow beyond the group protocol's holds: >= %.1f ms (%s): %d requests, %.1f s of latency\n",
			s.GroupRequests, s.ThresholdMs, s.ThresholdFrom, s.Slow, s.SlowLatencyMs/1000)
	default:
		fmt.Fprintf(w, "%d answered produce requests; slow: >= %.1f ms (%s): %d requests, %.1f s of latency\n",
			s.ProduceRequests, s.ThresholdMs, s.ThresholdFrom, s.Slow, s.SlowLatencyMs/1000)
	}
	fmt.Fprintf(w, "evidence: %d writes, %d journal commits, %d lock waits, %d run-queue delays, %d JVM pauses, %d connections' threads; own writes matched by %s\n",
		s.Writes, s.Commits, s.LockWaits, s.RunDelays, s.JVMPauses, s.ConnThreads, matchedBy(s.MatchedBy))
	if n := s.ReplicationBy[explain.ReplicationByFetch] + s.ReplicationBy[explain.ReplicationByGap]; n > 0 {
		fmt.Fprintf(w, "replication measured by the followers' fetches past the request's last offset for %d of the %d slow acks=all requests with their appends found (else by the gap to the response)\n",
			s.ReplicationBy[explain.ReplicationByFetch], n)
	}
	for _, m := range s.MissingEvidence {
		fmt.Fprintf(w, "missing: %s\n", output.Escape(m))
	}
	fmt.Fprintln(w)
}

// writeTitledTable prints title after a blank line, then header and the
// rows rows prints through tw, flushed.
func writeTitledTable(w io.Writer, tw *tabwriter.Writer, title, header string, rows func()) error {
	fmt.Fprintf(w, "\n%s\n", title)
	fmt.Fprintln(tw, header)
	rows()
	return tw.Flush()
}

// writeCauses prints the causes with requests, and the slow requests whose
// root was the journal.
func writeCauses(_ io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	fmt.Fprintln(tw, "CAUSE\tREQUESTS\tSHARE\tLATENCY SUM\tEXPLAINED")
	for _, c := range s.Causes {
		if c.Requests == 0 {
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%.1f s\t%.1f s\n", c.Cause, c.Requests, 100*c.Share, c.LatencyMs/1000, c.ExplainedMs/1000)
	}
	if s.Journal > 0 {
		fmt.Fprintf(tw, "  of which root journal\t%d\t%.1f%%\t\t\n", s.Journal, 100*float64(s.Journal)/float64(max(s.Slow, 1)))
	}
	return tw.Flush()
}

// writeFollowers prints what the followers' recordings say their part of
// replication went to.
func writeFollowers(w io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	if len(s.Followers) == 0 {
		return nil
	}
	return writeTitledTable(w, tw, "REPLICATION BY FOLLOWER (its recording read too)", "FOLLOWER\tFOLLOWER CAUSE\tREQUESTS", func() {
		for _, f := range s.Followers {
			fmt.Fprintf(tw, "broker %d\t%s\t%d\n", f.Broker, f.Cause, f.Requests)
		}
	})
}

// writeStalls prints the stalls: writes that hung, per device.
func writeStalls(w io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	if len(s.Stalls) == 0 {
		return nil
	}
	return writeTitledTable(w, tw, "STALLS (writes that hung)", "DEVICE\tSTART\tEND\tDURATION\tWRITES\tSLOW REQUESTS\tPARTITIONS", func() {
		for _, st := range s.Stalls {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%.0f ms\t%d\t%d\t%s\n", output.Escape(st.Dev), st.Start.Local().Format(clock), st.End.Local().Format(clock),
				st.DurationMs, st.Writes, st.Requests, output.Escape(abbreviate(st.Partitions, 6)))
		}
	})
}

// writeWorstPartitions prints the partitions with the most slow latency.
func writeWorstPartitions(w io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	if len(s.Partitions) == 0 {
		return nil
	}
	return writeTitledTable(w, tw, "WORST PARTITIONS", "PARTITION\tSLOW REQUESTS\tLATENCY SUM\tMAX WRITE", func() {
		for _, p := range s.Partitions {
			fmt.Fprintf(tw, "%s\t%d\t%.1f s\t%.1f ms\n", output.Escape(p.Partition), p.Requests, p.LatencyMs/1000, p.MaxWriteMs)
		}
	})
}

// writeWorstDevices prints the devices under the most slow requests.
func writeWorstDevices(w io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	if len(s.Devices) == 0 {
		return nil
	}
	return writeTitledTable(w, tw, "WORST DEVICES", "DEVICE\tSLOW REQUESTS\tWRITES\tMAX WRITE", func() {
		for _, d := range s.Devices {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f ms\n", output.Escape(d.Dev), d.Requests, d.Writes, d.MaxWriteMs)
		}
	})
}

// writeSlowAppends prints the slowest appends with the journal commits
// that overlapped them.
func writeSlowAppends(w io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	if s.SlowWritesTotal <= 0 {
		return nil
	}
	title := fmt.Sprintf("SLOW APPENDS: %d, %d of them while a journal commit was pending or running; the slowest:",
		s.SlowWritesTotal, s.SlowWritesUnderCommit)
	return writeTitledTable(w, tw, title, "START TIME\tEND TIME\tLATENCY\tTID\tBYTES\tOFF_KB\tFILE\tJOURNAL COMMITS", func() {
		for _, sw := range s.SlowWrites {
			commits := "-"
			if len(sw.Commits) > 0 {
				parts := make([]string, 0, len(sw.Commits))
				for _, c := range sw.Commits {
					parts = append(parts, fmt.Sprintf("%s %s %.1f ms", output.Escape(c.Kind), c.Start.Local().Format(clock), c.LatencyMs))
				}
				commits = abbreviate(parts, 3)
			}
			fmt.Fprintf(tw, "%s\t%s\t%.1f ms\t%d\t%d\t%d\t%s\t%s\n", sw.Start.Local().Format(clock), sw.End.Local().Format(clock),
				sw.LatencyMs, sw.TID, sw.Bytes, sw.Offset/1024, output.Escape(sw.File), commits)
		}
	})
}

// writeWorstCommits prints the slowest journal commits under slow
// requests.
func writeWorstCommits(w io.Writer, tw *tabwriter.Writer, s *explain.Summary) error {
	if len(s.WorstCommits) == 0 {
		return nil
	}
	return writeTitledTable(w, tw, "WORST JOURNAL COMMITS (under slow requests)", "DEVICE\tKIND\tSTART\tEND\tLATENCY\tSLOW REQUESTS", func() {
		for _, c := range s.WorstCommits {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.1f ms\t%d\n", output.Escape(c.Dev), output.Escape(c.Kind), c.Start.Local().Format(clock), c.End.Local().Format(clock), c.LatencyMs, c.Requests)
		}
	})
}

func matchedBy(m map[string]int64) string {
	if len(m) == 0 {
		return "none found"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func abbreviate(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ",")
	}
	return strings.Join(items[:n], ",") + fmt.Sprintf(",... (%d)", len(items))
}

type jsonWriter struct {
	j    *output.JSONLines
	rows bool
}

func (j *jsonWriter) Finding(f *explain.Finding) error {
	if !j.rows {
		return nil
	}
	return j.j.Encode(f)
}

// Clocks is written as a first line {"clocks": [...]}.
func (j *jsonWriter) Clocks(c *explain.Cluster) error {
	type clock struct {
		Broker    int32    `json:"broker"`
		Dir       string   `json:"dir"`
		Reference bool     `json:"reference,omitempty"`
		Aligned   bool     `json:"aligned"`
		OffsetMs  *float64 `json:"offset_ms,omitempty"`
		ErrorMs   *float64 `json:"error_ms,omitempty"`
		Exchanges int      `json:"exchanges"`
		Agreeing  int      `json:"agreeing"`
	}
	cs := make([]clock, len(c.Recordings))
	for i, r := range c.Recordings {
		cs[i] = clock{Broker: r.NodeID, Dir: r.Dir, Reference: i == 0, Aligned: c.Aligned[i]}
		if i > 0 && c.Aligned[i] {
			off, e := float64(c.Clocks[i].OffsetNs)/1e6, float64(c.Clocks[i].ErrorNs)/1e6
			cs[i].OffsetMs, cs[i].ErrorMs, cs[i].Exchanges, cs[i].Agreeing = &off, &e, c.Clocks[i].Exchanges, c.Clocks[i].Agreeing
		}
	}
	return j.j.Encode(struct {
		Clocks []clock `json:"clocks"`
	}{cs})
}

// Broker writes nothing: each finding names its broker's address, each
// summary its node id.
func (j *jsonWriter) Broker(int32, string) error { return nil }

// Summary is written as one last line {"summary": {...}} so that a
// consumer of the findings can tell it apart.
func (j *jsonWriter) Summary(s *explain.Summary) error {
	return j.j.Encode(struct {
		Summary *explain.Summary `json:"summary"`
	}{s})
}

func (j *jsonWriter) Flush() error { return j.j.Flush() }

// step is one line of a timeline.
type step struct {
	at   time.Time
	what string
}

// WriteTimeline prints one request's timeline: arrival, waits, writes
// (its own and those it waited for), lock waits, journal commits, and the
// response, with times relative to arrival; then its cause.
func WriteTimeline(w io.Writer, f *explain.Finding) error {
	steps := timelineSteps(f)
	slices.SortStableFunc(steps, func(a, b step) int { return a.at.Compare(b.at) })
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\t+MS\tEVENT")
	for _, s := range steps {
		fmt.Fprintf(tw, "%s\t%+.1f\t%s\n", s.at.Local().Format(clock), float64(s.at.Sub(f.Arrival))/1e6, s.what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cause := f.Cause
	if f.Root != "" {
		cause += " (root: " + f.Root + ")"
	}
	// The detail names threads and topics: the broker's strings.
	_, err := fmt.Fprintf(w, "\ncause: %s: %s\n", cause, output.Escape(f.Detail))
	return err
}

// timeline collects a request's steps in the order they are found (the
// order of steps at the same time).
type timeline struct{ steps []step }

func (t *timeline) add(at time.Time, format string, args ...any) {
	t.steps = append(t.steps, step{at, fmt.Sprintf(format, args...)})
}

// timelineSteps lists the steps of f's timeline, unsorted: the request's
// own, then each kind of evidence found for it.
func timelineSteps(f *explain.Finding) []step {
	var t timeline
	api := "Produce"
	if f.API != "" {
		api = output.Escape(f.API)
	}
	t.add(f.Arrival, "request arrives: %s v%d from %s (%s), correlation id %d", api, f.APIVersion, output.Escape(f.Client), output.Escape(f.ClientID), f.CorrelationID)
	if f.QueuedMs > 0 {
		t.add(f.End.Add(-ms(f.BrokerMs)), "broker takes it, after %.1f ms behind the previous request on the connection", f.QueuedMs)
	}
	t.fetchSplit(f)
	t.groupSplit(f)
	t.appends(f)
	t.threadWaits(f)
	t.parkWaits(f)
	for _, p := range f.Pauses {
		t.add(p.Start, "  the JVM stops: %s %s", output.Escape(p.Type), output.Escape(p.Name))
		t.add(p.End, "  the JVM resumes after %.1f ms", p.LatencyMs)
	}
	for _, rf := range f.Replication {
		t.replica(rf, "the request's")
	}
	if qb := f.QueuedBehind; qb != nil {
		for _, rf := range qb.Replication {
			t.replica(rf, fmt.Sprintf("request %d's", qb.CorrelationID))
		}
	}
	for _, c := range f.Commits {
		t.add(c.Start, "  %s on %s starts", output.Escape(c.Kind), output.Escape(c.Dev))
		t.add(c.End, "  %s on %s ends after %.1f ms", output.Escape(c.Kind), output.Escape(c.Dev), c.LatencyMs)
	}
	if f.ResponseMs > 0 {
		t.add(f.End.Add(-ms(f.ResponseMs)), "response starts to leave")
	}
	t.add(f.End, "response sent: %.1f ms after arrival", f.LatencyMs)
	return t.steps
}

// fetchSplit adds a fetch's purgatory, its reads from disk and its
// split.
func (t *timeline) fetchSplit(f *explain.Finding) {
	sp := f.FetchSplit
	if sp == nil {
		return
	}
	if sp.PurgatoryMs > 0 {
		from := f.End.Add(-ms(f.BrokerMs))
		t.add(from, "  waits for data that is not there (purgatory: %s)", sp.Basis)
		t.add(from.Add(ms(sp.PurgatoryMs)), "  purgatory ends after %.1f ms", sp.PurgatoryMs)
	}
	for _, k := range f.DiskReads {
		t.add(k.Start, "  network thread tid %d sleeps reading from disk at %s", k.TID, output.Escape(strings.Join(k.Stack[:min(len(k.Stack), 4)], " < ")))
		t.add(k.End, "  network thread tid %d reads on after %.1f ms", k.TID, k.LatencyMs)
	}
	for _, p := range f.PageCacheAdds {
		t.add(p.Start, "  tid %d adds %d pages of inode %d on %s to the page cache (read from disk)", p.TID, p.Pages, p.Inode, output.Escape(p.Dev))
	}
	t.add(f.End, "split: purgatory %.1f ms, other wait %.1f ms, reading %.1f ms (disk %.1f), sending %.1f ms; slow: %.1f ms",
		sp.PurgatoryMs, sp.OtherMs, sp.ReadingMs, sp.DiskMs, sp.SendingMs, sp.AbnormalMs)
}

// groupSplit adds a group request's hold by the group protocol and its
// split.
func (t *timeline) groupSplit(f *explain.Finding) {
	sp := f.GroupSplit
	if sp == nil {
		return
	}
	if sp.HoldMs > 0 {
		t.add(sp.HoldEnd.Add(-ms(sp.HoldMs)), "  held by the group protocol: waits for %s", holdWhat(sp.Hold))
		t.add(sp.HoldEnd, "  hold ends after %.1f ms", sp.HoldMs)
	}
	t.add(f.End, "split: held %.1f ms, the coordinator's own %.1f ms", sp.HoldMs, sp.OwnMs)
}

// holdWhat says what a group request waited for.
func holdWhat(h grouphold.Hold) string {
	switch h {
	case grouphold.HoldMembers:
		return "the other members to join"
	case grouphold.HoldNewGroup:
		return "more members of a new group (group.initial.rebalance.delay.ms)"
	case grouphold.HoldLeader:
		return "the leader's assignment"
	}
	return "the end of a rebalance not seen whole"
}

// appends adds, per partition of f, the other appends it waited for and
// its own append (or that none was found).
func (t *timeline) appends(f *explain.Finding) {
	for _, p := range f.Partitions {
		for _, b := range p.Blocking {
			t.add(b.Start, "  other append to %s-%d starts: tid %d %s, %d bytes at %s:%d", output.Escape(p.Topic), p.Partition, b.TID, output.Escape(b.Thread), b.Bytes, output.Escape(b.File), b.Offset)
			t.add(b.End, "  other append to %s-%d ends after %.1f ms", output.Escape(p.Topic), p.Partition, b.LatencyMs)
		}
		if ow := p.Write; ow != nil {
			t.add(ow.Start, "own append to %s-%d starts: tid %d %s, %d bytes at %s:%d (matched by %s)", output.Escape(p.Topic), p.Partition, ow.TID, output.Escape(ow.Thread), ow.Bytes, output.Escape(ow.File), ow.Offset, ow.MatchedBy)
			t.add(ow.End, "own append to %s-%d ends after %.1f ms", output.Escape(p.Topic), p.Partition, ow.LatencyMs)
		} else {
			t.add(f.Arrival, "  (no append to %s-%d found)", output.Escape(p.Topic), p.Partition)
		}
	}
}

// threadWaits adds where the threads carrying f waited: on monitors
// (JFR), in the kernel, for a CPU; and which network thread serves its
// connection.
func (t *timeline) threadWaits(f *explain.Finding) {
	for _, l := range f.LockWaits {
		t.add(l.Start, "  tid %d waits for monitor %s (JFR)", l.TID, output.Escape(l.Monitor))
		t.add(l.End, "  tid %d enters the monitor after %.1f ms", l.TID, l.LatencyMs)
	}
	for _, k := range f.KernelWaits {
		t.add(k.Start, "  tid %d %s blocks in the kernel at %s", k.TID, output.Escape(k.Thread), output.Escape(strings.Join(k.Stack[:min(len(k.Stack), 6)], " < ")))
		t.add(k.End, "  tid %d runs again after %.1f ms", k.TID, k.LatencyMs)
	}
	if n := f.NetworkThread; n != nil {
		t.add(f.Arrival, "  its connection is served by network thread tid %d %s", n.TID, output.Escape(n.Thread))
	}
	for _, d := range f.RunDelays {
		how := "woken"
		if d.Preempted {
			how = "preempted"
		}
		t.add(d.Start, "  tid %d %s runnable (%s), waits for a CPU", d.TID, output.Escape(d.Thread), how)
		t.add(d.End, "  tid %d runs on cpu%d after %.1f ms; the CPU had gone to %s (pid %d)", d.TID, d.CPU, d.LatencyMs, output.Escape(d.HolderComm), d.HolderPID)
	}
}

// parkWaits adds the sleeps of f's handler and of the threads it waited
// for (indented by depth), and who woke each.
func (t *timeline) parkWaits(f *explain.Finding) {
	for _, p := range f.ParkWaits {
		on := ""
		if p.Blocker != "" {
			on = " parked on " + output.Escape(p.Blocker)
		}
		t.add(p.Start, "  %stid %d %s sleeps%s", strings.Repeat("  ", p.Depth), p.TID, output.Escape(p.Thread), on)
		if p.WakerTID != 0 {
			t.add(p.End, "  %stid %d woken by tid %d %s after %.1f ms", strings.Repeat("  ", p.Depth), p.TID, p.WakerTID, output.Escape(p.WakerThread), p.LatencyMs)
		} else {
			t.add(p.End, "  %stid %d unparked after %.1f ms", strings.Repeat("  ", p.Depth), p.TID, p.LatencyMs)
		}
	}
}

// replica adds a follower's fetch that passed a request's last offset
// (whose: "the request's" or the request ahead's), and the follower's
// fetch before it.
func (t *timeline) replica(rf explain.ReplicaFetch, whose string) {
	if rf.PrevFetchArrival != nil {
		t.add(*rf.PrevFetchArrival, "  follower %d's previous fetch", rf.Replica)
	}
	last := ""
	if rf.Decisive {
		last = ", the last needed: the high watermark moves past it"
	}
	t.add(rf.FetchArrival, "  follower %d fetches %s-%d from offset %d, past %s last offset %d, %.1f ms after the append (silent up to %.1f ms)%s",
		rf.Replica, output.Escape(rf.Topic), rf.Partition, rf.FetchOffset, whose, rf.LastOffset, rf.LateMs, rf.SilentMs, last)
}

func ms(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
