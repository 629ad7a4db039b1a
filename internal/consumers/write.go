package consumers

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kscope-dev/kscope/internal/fetchsplit"
	"github.com/kscope-dev/kscope/internal/output"
)

// Formats are the output formats Write takes.
func Formats() []string { return []string{"table", "json"} }

// Write writes the report as tables (findings, consumers and their most
// behind partitions, rebalances, end-to-end latency; top rows of each) or
// one JSON object.
func Write(w io.Writer, r *Report, format string, top int) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "table", "":
		ew := &output.ErrWriter{W: w}
		writeTable(ew, r, top)
		return ew.Err
	}
	return output.UnknownFormat(format)
}

func writeTable(w io.Writer, r *Report, top int) {
	fmt.Fprintf(w, "%d consumers, %d rebalances in %s\n", len(r.Consumers), len(r.Rebalances), dur(r.Seconds*1000))
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "\nno findings: no consumer behind, no rebalance (kscope consumers --rules lists the rules)")
	} else {
		fmt.Fprintln(w, "\nFINDINGS")
		for i, f := range limit(r.Findings, top) {
			fmt.Fprintf(w, "%2d. [%s] %s\n      %s (rule %s)\n", i+1, f.Severity, f.Title, f.Evidence, f.Rule)
		}
	}
	writeConsumers(w, r, top)
	writeRebalances(w, r, top)
	writeFetchLatency(w, r, top)
	if len(r.EndToEnd) > 0 {
		fmt.Fprintln(w, "\nEND-TO-END LATENCY (produce request's arrival to the first fetch response carrying the message)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOPIC\tMESSAGES\tp50 ms\tp99 ms\tp99.9 ms\tMAX ms")
		for _, t := range limit(r.EndToEnd, top) {
			fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\n", cell(t.Topic), t.Messages, t.P50Ms, t.P99Ms, t.P999Ms, t.MaxMs)
		}
		tw.Flush()
	}
}

func writeConsumers(w io.Writer, r *Report, top int) {
	if len(r.Consumers) == 0 {
		return
	}
	fmt.Fprintln(w, "\nCONSUMERS (lag from the wire: fetch position against the high watermark; time: the age of the data at the position)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTOPIC-PARTITION\tCLIENT\tPOSITION\tHIGH WATERMARK\tLAG\tLAG TIME\tBEHIND FOR\tCOMMITTED\tCOMMIT GAP")
	for _, c := range limit(r.Consumers, top) {
		group := groupName(c.Group)
		for j, p := range c.Partitions {
			if j == 8 {
				fmt.Fprintf(tw, "%s\t%d more partitions\n", cell(group), len(c.Partitions)-8)
				break
			}
			committed, gap := "-", "-"
			if p.Committed >= 0 {
				committed, gap = strconv.FormatInt(p.Committed, 10), strconv.FormatInt(p.CommitGap, 10)
			}
			lagTime := "-"
			if p.LagTimed {
				lagTime = dur(p.LagMs)
			}
			fmt.Fprintf(tw, "%s\t%s-%d\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", cell(group), cell(p.Topic), p.Partition, cell(p.Client),
				p.Position, p.HighWatermark, p.LagMessages, lagTime, dur(p.BehindSec*1000), committed, gap)
		}
	}
	tw.Flush()
}

func writeFetchLatency(w io.Writer, r *Report, top int) {
	if len(r.FetchLatency) == 0 {
		return
	}
	fmt.Fprintln(w, "\nFETCH LATENCY (request's arrival to response's last byte; SLOW: without purgatory, the wait for data that was not there)")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tCLIENTS\tFETCHES\tp50\tp99\tSLOW p50\tSLOW p99\tSLOW MAX\tPURGATORY\tASSUMED")
	for _, fl := range limit(r.FetchLatency, top) {
		group := groupName(fl.Group)
		clients := cell(fl.Clients[0])
		if len(fl.Clients) > 1 {
			clients += fmt.Sprintf(" +%d", len(fl.Clients)-1)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%.0f%%\t%d\n", cell(group), clients, fl.Fetches, dur(fl.P50Ms), dur(fl.P99Ms),
			dur(fl.AbnormalP50Ms), dur(fl.AbnormalP99Ms), dur(fl.AbnormalMaxMs), fl.PurgatoryShare*100, fl.Bases[fetchsplit.BasisAssumed])
	}
	tw.Flush()
}

func writeRebalances(w io.Writer, r *Report, top int) {
	if len(r.Rebalances) == 0 {
		return
	}
	fmt.Fprintln(w, "\nREBALANCES")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tPROTOCOL\tSTART\tTRIGGER\tMEMBER\tJOIN\tSYNC\tTOTAL\tCOORDINATOR\tMEMBERS\tSLOWEST (AFTER)")
	for _, rb := range limit(r.Rebalances, top) {
		total := dur(rb.TotalMs)
		switch {
		case rb.Superseded:
			total += " (superseded)"
		case !rb.Complete:
			total += " (not complete)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s (%s)\n", cell(rb.Group), rb.Protocol, rb.Start.UTC().Format("15:04:05.000"),
			rb.Trigger, cell(rb.Member), dur(rb.JoinMs), dur(rb.SyncMs), total, dur(rb.CoordinatorMs), rb.Members, cell(rb.Slowest), dur(rb.SlowestMs))
	}
	tw.Flush()
}

func limit[T any](s []T, top int) []T {
	if top > 0 && len(s) > top {
		return s[:top]
	}
	return s
}

// cell is a client-chosen name escaped for the terminal, or a dash.
// groupName is a group's name in a table: "(none)" for consumers
// without a group.
func groupName(g string) string {
	if g == "" {
		return "(none)"
	}
	return g
}

func cell(s string) string {
	if s == "" {
		return "-"
	}
	return strings.ReplaceAll(output.Escape(s), "\t", `\t`)
}
