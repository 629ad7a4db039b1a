// Package benchout writes what kscope bench compare and kscope bench
// report found: a comparison of two runs as an aligned table or JSON, and
// a table of one or more runs side by side. Every string that came from a
// RESULT.json is escaped before it is printed: a result file can come from
// anywhere, and must not be able to move the cursor or forge lines.
package benchout

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/bench/compare"
	"github.com/kscope-dev/kscope/internal/output"
)

// ErrMerge is returned by WriteReport when the runs' histograms cannot be
// merged (before anything is written).
var ErrMerge = errors.New("cannot merge the runs")

// Formats of a comparison.
var Formats = []string{"table", "json"}

// WriteComparison writes c as an aligned table ("table") or one JSON
// document ("json").
func WriteComparison(w io.Writer, c *compare.Comparison, format string) error {
	switch format {
	case "table":
		return comparisonTable(w, c)
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(c)
	}
	return output.UnknownFormat(format)
}

func comparisonTable(w io.Writer, c *compare.Comparison) error {
	nameA, nameB := label(c.NameA, "A"), label(c.NameB, "B")
	fmt.Fprintf(w, "A (baseline): %s\nB:            %s\n", nameA, nameB)
	fmt.Fprintf(w, "verdict: a change beyond %s, significant at %s after Holm's adjustment over all the tests; tested on:\n",
		pct(c.Threshold*100), strconv.FormatFloat(c.Alpha, 'g', -1, 64))
	fmt.Fprintln(w, "  throughput, p50     Mann-Whitney over per-second samples")
	fmt.Fprintln(w, "  p90 to p99.99       bootstrap over seconds: 95% interval of B-A")
	fmt.Fprintln(w, "  > threshold         share of requests above it, exact test with the design effect of A's slow requests clustering in time")
	for _, s := range c.Warnings {
		fmt.Fprintf(w, "warning: %s\n", output.Escape(s))
	}
	for _, s := range c.Notes {
		fmt.Fprintf(w, "note: %s\n", output.Escape(s))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "METRIC\tSTAT\tUNIT\tA\tB\tCHANGE\t95% INTERVAL B-A\tP\tTESTED ON\tVERDICT")
	for _, r := range c.Rows {
		unit, a, b := r.Unit, number(r.A), number(r.B)
		switch r.Unit {
		case "us": // microseconds are printed as ms, like the rest of kscope
			unit, a, b = "ms", millis(r.A), millis(r.B)
		case "%":
			unit = "% reqs"
			if ex := r.Exceedance; ex != nil {
				a, b = share(ex.ShareA.Value, ex.CountA), share(ex.ShareB.Value, ex.CountB)
			}
		}
		change := "-"
		if r.ChangePct != nil {
			change = pct(*r.ChangePct)
			if *r.ChangePct > 0 {
				change = "+" + change
			}
		}
		interval := "-"
		switch {
		case r.Interval != nil:
			interval = "[" + signed(millis(r.Interval.Lo)) + ", " + signed(millis(r.Interval.Hi)) + "] ms"
		case r.Exceedance != nil:
			d := r.Exceedance.Diff
			interval = "[" + signed(strconv.FormatFloat(d.Lo*100, 'f', 3, 64)) + ", " + signed(strconv.FormatFloat(d.Hi*100, 'f', 3, 64)) + "] pp"
		}
		p := "-"
		if r.Method != compare.MethodNone && (r.Method != compare.MethodMannWhitney || (r.Test.NA > 0 && r.Test.NB > 0)) {
			p = pValue(r.PAdjusted)
		}
		tested := output.Escape(r.Sample)
		if r.Method == compare.MethodMannWhitney {
			tested += fmt.Sprintf(" (%d/%d)", r.Test.NA, r.Test.NB)
		}
		verdict := string(r.Verdict)
		if r.Reason != "" {
			verdict += " (" + r.Reason + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", output.Escape(r.Metric), r.Stat, unit, a, b, change, interval, p, tested, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	regs := c.Regressions()
	if len(regs) == 0 {
		_, err := fmt.Fprintln(w, "\nno regression")
		return err
	}
	names := make([]string, len(regs))
	for i, r := range regs {
		names[i] = output.Escape(r.Metric) + " " + r.Stat
	}
	_, err := fmt.Fprintf(w, "\n%d %s: %s\n", len(regs), plural(len(regs), "regression"), strings.Join(names, ", "))
	return err
}

// share prints a share of requests as a percentage and its count.
func share(v float64, n int64) string {
	return strconv.FormatFloat(v*100, 'f', 3, 64) + " (" + strconv.FormatInt(n, 10) + ")"
}

// signed puts a + before a number that is not negative.
func signed(s string) string {
	if strings.HasPrefix(s, "-") {
		return s
	}
	return "+" + s
}

func label(name, def string) string {
	if name == "" {
		return def
	}
	return output.Escape(name)
}

func plural(n int, s string) string {
	if n == 1 {
		return s
	}
	return s + "s"
}

func pct(v float64) string {
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if s == "-0.0" {
		s = "0.0"
	}
	return s + "%"
}

func pValue(p float64) string {
	if p < 0.0001 {
		return "<0.0001"
	}
	return strconv.FormatFloat(p, 'f', 4, 64)
}

// number prints a rate: more digits for small values.
func number(v float64) string {
	switch {
	case math.Abs(v) >= 1e15:
		return strconv.FormatFloat(v, 'g', 4, 64)
	case math.Abs(v) >= 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 3, 64)
}

func millis(us float64) string {
	if math.Abs(us) >= 1e15 {
		return strconv.FormatFloat(us/1000, 'g', 4, 64)
	}
	return strconv.FormatFloat(us/1000, 'f', 3, 64)
}

// Run is one result of a report and its label (the file name).
type Run struct {
	Name   string
	Result *bench.Result
}

// ReportOptions tune a report.
type ReportOptions struct {
	// Merged adds a column for all runs together: counts summed, latency
	// percentiles from the runs' histograms merged.
	Merged bool
}

// reportSeries is the order of latency sections in a report.
var reportSeries = []string{bench.LatencyService, bench.LatencyResponse, bench.LatencyEndToEnd, bench.LatencySyncWait, bench.LatencyBrokerRTT}

// WriteReport writes one column per run: what was run, what was
// achieved, the accounting, and the latency percentiles of each series.
func WriteReport(w io.Writer, runs []Run, opts ReportOptions) error {
	cols := make([]map[string]string, 0, len(runs)+1)
	for _, r := range runs {
		cols = append(cols, runCells(r))
	}
	series := seriesOf(runs)
	if opts.Merged && len(runs) > 1 {
		m, err := mergedCells(runs, series)
		if err != nil {
			return err
		}
		cols = append(cols, m)
	}
	for i, r := range runs {
		for _, s := range series {
			latencyCells(cols[i], s, r.Result.Latency[s])
		}
	}

	rows := []string{"run", "start", "measured / warm-up", "interrupted", "",
		"topics", "partitions", "producers / consumers", "target rate", "mode", "message size", "keys", "compressibility", "headers", "",
		"acks", "compression", "linger", "batch bytes", "max in flight", "idempotent", "library", "",
		"host", "kernel", "cpu", "broker", "log dir fs", "",
		"msgs/s", "MB/s", "sent", "acked", "failed", "consumed", "lost", "duplicated", "client cpu/msg (us)"}
	for _, s := range series {
		rows = append(rows, "")
		for _, q := range quantileNames {
			rows = append(rows, latencyRow(s, q))
		}
		rows = append(rows, latencyRow(s, "count"))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, row := range rows {
		if row == "" {
			fmt.Fprintln(tw, strings.Repeat("\t", len(cols)))
			continue
		}
		if row == "interrupted" && !anyInterrupted(runs) {
			continue
		}
		var b strings.Builder
		b.WriteString(row)
		for i, c := range cols {
			v, ok := c[row]
			if !ok && i < len(runs) { // the merged column leaves blank what it does not sum
				v = "-"
			}
			b.WriteString("\t" + v)
		}
		fmt.Fprintln(tw, b.String())
	}
	return tw.Flush()
}

var quantileNames = []string{"p50", "p90", "p99", "p99.9", "p99.99", "max"}

func latencyRow(series, stat string) string {
	if stat == "count" {
		return output.Escape(series) + " count"
	}
	return output.Escape(series) + " " + stat + " (ms)"
}

func anyInterrupted(runs []Run) bool {
	for _, r := range runs {
		if r.Result.Interrupted {
			return true
		}
	}
	return false
}

// seriesOf lists the latency series of any run: the known ones in order,
// then others sorted. At most compare.MaxSeries per run (Load checks).
func seriesOf(runs []Run) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range reportSeries {
		for _, r := range runs {
			if r.Result.Latency[s] != nil && !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	var others []string
	for _, r := range runs {
		for s := range r.Result.Latency {
			if !seen[s] {
				seen[s] = true
				others = append(others, s)
			}
		}
	}
	slices.Sort(others)
	return append(out, others...)
}

// cut escapes a string from a file and shortens it for a table cell.
func cut(s string) string {
	const maxCell = 40
	if len(s) > maxCell {
		n := maxCell
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "..."
	}
	if s == "" {
		return "-"
	}
	return output.Escape(s)
}

// cutLeft is cut keeping the end, for file names.
func cutLeft(s string) string {
	const maxCell = 40
	if len(s) > maxCell {
		n := len(s) - maxCell
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		s = "..." + s[n:]
	}
	return output.Escape(s)
}

func runCells(run Run) map[string]string {
	r := run.Result
	wl, cl, env, t := r.Workload, r.Client, r.Environment, r.Totals
	c := map[string]string{
		"run":                   cutLeft(run.Name),
		"start":                 r.Start.UTC().Format(time.RFC3339),
		"measured / warm-up":    seconds(wl.DurationMs) + " / " + seconds(wl.WarmupMs),
		"interrupted":           yesNo(r.Interrupted),
		"topics":                cut(strings.Join(wl.Topics, ",")),
		"partitions":            fmt.Sprintf("%d (rf %d)", wl.Partitions, wl.ReplicationFactor),
		"producers / consumers": fmt.Sprintf("%d / %d", wl.Producers, wl.Consumers),
		"mode":                  "async",
		"message size":          cut(wl.MessageSize),
		"keys":                  cut(wl.Keys),
		"compressibility":       strconv.FormatFloat(wl.Compressibility, 'g', 3, 64),
		"headers":               strconv.Itoa(wl.Headers),
		"acks":                  cut(cl.Acks),
		"compression":           cut(cl.Compression),
		"linger":                strconv.FormatFloat(cl.LingerMs, 'g', 4, 64) + " ms",
		"batch bytes":           strconv.Itoa(cl.BatchBytes),
		"max in flight":         strconv.Itoa(cl.MaxInFlight),
		"idempotent":            yesNo(cl.Idempotent),
		"library":               cut(cl.Library),
		"host":                  cut(env.Host),
		"kernel":                cut(env.Kernel),
		"cpu":                   cut(fmt.Sprintf("%d x %s", env.CPUs, env.CPU)),
		"broker":                cut(env.BrokerVersion),
		"log dir fs":            cut(env.LogDirFS),
		"msgs/s":                number(t.MsgsPerSec),
		"MB/s":                  number(t.MBPerSec),
		"sent":                  strconv.FormatInt(t.Sent, 10),
		"acked":                 strconv.FormatInt(t.Acked, 10),
		"failed":                strconv.FormatInt(t.Failed, 10),
		"consumed":              strconv.FormatInt(t.Consumed, 10),
		"lost":                  strconv.FormatInt(t.Lost, 10),
		"duplicated":            strconv.FormatInt(t.Duplicated, 10),
		"client cpu/msg (us)":   strconv.FormatFloat(t.ClientCPUPerMsgUs, 'f', 2, 64),
	}
	if wl.RateMax {
		c["target rate"] = "max"
	} else {
		c["target rate"] = number(wl.Rate) + " msgs/s"
	}
	if wl.Sync {
		c["mode"] = "sync"
	}
	return c
}

func latencyCells(c map[string]string, series string, l *bench.Latency) {
	if l == nil {
		return
	}
	for i, v := range []int64{l.P50Us, l.P90Us, l.P99Us, l.P999Us, l.P9999Us, l.MaxUs} {
		c[latencyRow(series, quantileNames[i])] = millis(float64(v))
	}
	c[latencyRow(series, "count")] = strconv.FormatInt(l.Count, 10)
}

func mergedCells(runs []Run, series []string) (map[string]string, error) {
	c := map[string]string{"run": "merged"}
	var sum [6]int64
	rs := make([]*bench.Result, len(runs))
	for i, r := range runs {
		rs[i] = r.Result
		t := r.Result.Totals
		for j, v := range []int64{t.Sent, t.Acked, t.Failed, t.Consumed, t.Lost, t.Duplicated} {
			if v > math.MaxInt64-sum[j] { // saturate: the counts come from files
				sum[j] = math.MaxInt64
			} else {
				sum[j] += v
			}
		}
	}
	for j, k := range []string{"sent", "acked", "failed", "consumed", "lost", "duplicated"} {
		c[k] = strconv.FormatInt(sum[j], 10)
	}
	for _, s := range series {
		l, err := compare.MergeLatency(rs, s)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMerge, err)
		}
		latencyCells(c, s, l)
	}
	return c, nil
}

func seconds(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'g', -1, 64) + " s"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
