package output

import (
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/latency"
)

// WriteSummary prints per-API and per-topic latency tables and the slowest
// requests.
func WriteSummary(w io.Writer, s *latency.Summary) error {
	span := s.Span()
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	section := func(title string, groups []*latency.Group) {
		fmt.Fprintf(tw, "%s\tCOUNT\tRATE/s\tp50(ms)\tp90(ms)\tp99(ms)\tp99.9(ms)\tMAX(ms)\tNO RESPONSE\t\n", title)
		for _, g := range groups {
			rate := "-"
			if span > 0 {
				rate = strconv.FormatFloat(float64(g.Count+g.Unanswered)/span.Seconds(), 'f', 1, 64)
			}
			if g.Count == 0 {
				fmt.Fprintf(tw, "%s\t%d\t%s\t-\t-\t-\t-\t-\t%d\t\n", Escape(g.Name), g.Count, rate, g.Unanswered)
				continue
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", Escape(g.Name), g.Count, rate,
				ms(g.Quantile(50)), ms(g.Quantile(90)), ms(g.Quantile(99)), ms(g.Quantile(99.9)), ms(g.Max()), g.Unanswered)
		}
		fmt.Fprintln(tw, "\t\t\t\t\t\t\t\t\t")
	}
	section("API", s.APIs())
	if topics := s.Topics(); len(topics) > 0 {
		section("TOPIC", topics)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	slow := s.Slowest()
	if len(slow) == 0 {
		return nil
	}
	fmt.Fprintf(w, "SLOWEST %d REQUESTS\n", len(slow))
	t := newTableWriter(w)
	for _, r := range slow {
		if err := t.Write(r); err != nil {
			return err
		}
	}
	return t.Flush()
}

func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 3, 64)
}
