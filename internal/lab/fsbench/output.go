package fsbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/output"
)

// WriteJSON writes res as indented JSON.
func WriteJSON(w io.Writer, res *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// num formats a figure with about three significant digits.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a < 0.0005:
		return "0"
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

// meanCI formats a Stat as "mean ±ci" ("mean ±n/a" with one trial).
func meanCI(s Stat) string {
	if s.CI95 == nil {
		return num(s.Mean) + " ±n/a"
	}
	return num(s.Mean) + " ±" + num(*s.CI95)
}

// Describe is the one-line description of the set-up.
func (res *Result) Describe() string {
	w := res.Workload
	var b strings.Builder
	fmt.Fprintf(&b, "%d variant(s) x %d trial(s); load %g msg/s of %s B from %d producer(s), acks=%s, linger %v, %d partitions, %v measured after %v warm-up",
		len(res.Variants), res.Trials, w.Rate, w.MessageSize, w.Producers, w.Acks, time.Duration(w.Linger), w.Partitions, time.Duration(w.Duration), time.Duration(w.Warmup))
	if res.Noise != nil {
		fmt.Fprintf(&b, "; noise %s", res.Noise.describe())
	} else {
		b.WriteString("; no noise")
	}
	if res.Stall != nil {
		fmt.Fprintf(&b, "; stalls %s", res.Stall)
	}
	fmt.Fprintf(&b, "; SLO %g ms", res.SLOMs)
	return b.String()
}

// Environment is the one-line description of where it ran.
func (res *Result) Environment() string {
	dio := "buffered"
	if res.LoopDirectIO {
		dio = "direct I/O"
	}
	disk := fmt.Sprintf("loop devices (%s) on %d MiB sparse images", dio, res.ImageBytes>>20)
	if d := res.Device; d != nil {
		// The images are then served by the emulator: the loop devices
		// are as slow as its profile, not as this machine's disk.
		disk = fmt.Sprintf("loop devices (%s) on %d MiB images served by kscope's slow-device emulator (FUSE), profile %s, seed %d",
			dio, res.ImageBytes>>20, output.Escape(d.Name), d.Seed)
	}
	return fmt.Sprintf("Kafka %s, kernel %s, %d CPUs, host %s; %s", res.Kafka, res.Kernel, res.CPUs, res.Host, disk)
}

// WriteTable writes the summary, the verdicts and every run as aligned
// text tables.
func WriteTable(w io.Writer, res *Result) error {
	fmt.Fprintf(w, "kscope lab fs: %s\n%s\n", res.Describe(), res.Environment())
	if res.Interrupted {
		fmt.Fprintf(w, "INTERRUPTED: %d runs finished\n", len(res.Runs))
	}
	fmt.Fprintf(w, "\nMean ±95%% CI over trials (Student's t). Produce latency (ms) is bench's service latency, send to acknowledgement;\n"+
		"over SLO is the share of messages slower than %g ms; write is the broker's write calls on its segments;\n"+
		"journal is jbd2 commits (ext4) or iclog writes (xfs) of the file system.\n", res.SLOMs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"variant", "n"}
	for _, m := range Metrics {
		header = append(header, label(m, res))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, s := range res.Summary {
		row := []string{s.Variant, fmt.Sprint(s.Runs)}
		for _, m := range Metrics {
			row = append(row, meanCI(s.Metrics[m.Key]))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if err := writeAbove(w, res); err != nil {
		return err
	}
	if err := writeJournalDist(w, res); err != nil {
		return err
	}
	if len(res.Verdicts) > 0 {
		fmt.Fprintf(w, "\nVerdicts against %s: a change beyond %g%%, significant after Holm's adjustment. Produce latency over all trials'\n"+
			"requests (docs/compare.md: p50 by Mann–Whitney on per-second p50, p99 and p99.9 by a bootstrap over trials and seconds,\n"+
			"over SLO by the exact test of the shares with the design effect; p < %g); the rest by change of the mean and Mann–Whitney\n"+
			"on the per-second samples of all trials (p < %g).\n",
			res.Verdicts[0].Baseline, res.Threshold*100, res.Alpha/2, res.Alpha/2)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header = []string{"variant"}
		for _, m := range Metrics {
			header = append(header, m.Label)
		}
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, c := range res.Verdicts {
			row := []string{c.Variant}
			for _, r := range c.Rows {
				row = append(row, verdictCell(r))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "\nRuns, in the order they ran:\n")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "variant\ttrial\tacked\tmsg/s\tp50\tp99\tp99.9\tmax ms\tover SLO\twrites\twrite p99\twrite max ms\tjournal\tcommits\tp99\tmax ms\tnoise fsyncs\tfsync p99 ms\tdirty MiB\tfreezes\tmount")
	for _, r := range res.Runs {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s (%d)\t%d\t%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%d\t%s\n",
			r.Variant, r.Trial, r.Acked, num(r.MsgsPerSec), num(r.P50Ms), num(r.P99Ms), num(r.P999Ms), num(r.MaxMs),
			num(r.OverSLOPct)+"%", r.OverSLO, r.Writes, num(r.WriteP99Ms), num(r.WriteMaxMs),
			r.JournalKind, r.Journal, num(r.JournalP99Ms), num(r.JournalMaxMs),
			r.NoiseFsyncs, num(r.NoiseFsyncP99), num(float64(r.NoiseDirtyBytes)/(1<<20)), r.Freezes, r.MountOptions)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeExplained(w, res)
	for _, wn := range res.Warnings {
		fmt.Fprintf(w, "warning: %s\n", output.Escape(wn))
	}
	return nil
}

// writeAbove writes each variant's share of produce requests above the
// thresholds, with its 95% interval over trials, and the verdict of each
// share against the baseline.
func writeAbove(w io.Writer, res *Result) error {
	if len(res.Summary) == 0 || len(res.Summary[0].Above) == 0 {
		return nil
	}
	fmt.Fprintf(w, "\nProduce requests above thresholds: %% of all trials' requests [95%% interval over trials] (count); verdict against %s.\n", res.Summary[0].Variant)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"variant"}
	for _, a := range res.Summary[0].Above {
		header = append(header, fmt.Sprintf("> %g ms", a.AboveMs))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for _, s := range res.Summary {
		row := []string{s.Variant}
		for _, a := range s.Above {
			row = append(row, aboveCell(a, aboveVerdict(res, s.Variant, a.AboveMs)))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t"))
	}
	return tw.Flush()
}

// aboveCell is a share above a threshold, "[lo, hi] (count)", and its
// verdict when it has one.
func aboveCell(a AboveShare, verdict string) string {
	s := fmt.Sprintf("%s%% [%s, %s] (%d)", num(a.Share.Value*100), num(a.Share.Lo*100), num(a.Share.Hi*100), a.Count)
	if verdict != "" {
		s += ": " + verdict
	}
	return s
}

// aboveVerdict is the verdict (Worse, Better, NoChange) of a variant's
// share above ms, from its comparison's exceedance row; "" for the
// baseline or a share not tested.
func aboveVerdict(res *Result, variant string, ms float64) string {
	row := aboveRow(res, variant, ms)
	if row == nil {
		return ""
	}
	switch row.Verdict {
	case compare.Regression:
		return Worse
	case compare.Improvement:
		return Better
	}
	return NoChange
}

func aboveRow(res *Result, variant string, ms float64) *compare.Row {
	for _, c := range res.Verdicts {
		if c.Variant != variant || c.Latency == nil {
			continue
		}
		for i := range c.Latency.Rows {
			r := &c.Latency.Rows[i]
			if r.Exceedance != nil && r.Exceedance.Rung == "fixed" && float64(r.Exceedance.AboveUs) == ms*1000 {
				return r
			}
		}
	}
	return nil
}

func label(m Metric, res *Result) string {
	switch m.Unit {
	case "ms":
		return m.Label + " ms"
	case "%":
		return fmt.Sprintf(">%gms %%", res.SLOMs)
	}
	return m.Label
}

func verdictCell(r *VerdictRow) string {
	ch := "="
	switch {
	case r.ChangePct != nil && r.A != r.B:
		ch = fmt.Sprintf("%+.0f%%", *r.ChangePct)
		if math.Abs(*r.ChangePct) < 1 {
			ch = fmt.Sprintf("%+.1f%%", *r.ChangePct)
		}
	case r.ChangePct == nil && r.A != r.B:
		ch = "from 0"
	}
	return ch + " " + r.Verdict
}

// writeJournalDist writes each variant's journal commits by latency
// bucket, over its trials: the columns where some variant has commits.
func writeJournalDist(w io.Writer, res *Result) error {
	jd := journalDist(res)
	if jd == nil {
		return nil
	}
	var cols []int
	for k := range len(jd.Edges) + 1 {
		for _, row := range jd.Counts {
			if row[k] > 0 {
				cols = append(cols, k)
				break
			}
		}
	}
	fmt.Fprintf(w, "\nJournal commits by latency (ms), over all trials: jbd2 commits (ext4) or iclog writes (xfs);\n"+
		"ext4 fast commits (-O fast_commit: run by the fsyncing thread) in a row of their own.\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header := []string{"variant", "journal"}
	for _, k := range cols {
		header = append(header, bucketLabel(jd.Edges, k))
	}
	fmt.Fprintln(tw, strings.Join(header, "\t"))
	for i, row := range jd.Counts {
		cells := []string{jd.Variants[i], orDash(jd.Kinds[i])}
		for _, k := range cols {
			cells = append(cells, fmt.Sprint(row[k]))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}

// writeExplained writes a line per recorded run: where its recording is
// and what `kscope explain` says of it.
func writeExplained(w io.Writer, res *Result) {
	first := true
	for _, r := range res.Runs {
		if r.Explain == nil {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nExplain on each recording (kscope explain DIR: slow = its p99 unless --slow):\n")
			first = false
		}
		fmt.Fprintf(w, "%s trial %d: %s\n  %s\n", output.Escape(r.Variant), r.Trial, output.Escape(r.Explain.Line()), output.Escape(r.Recording))
	}
}
