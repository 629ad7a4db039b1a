// Package ioout writes kscope iotrace's events and summaries as an aligned
// table, JSON Lines or CSV.
package ioout

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/output"
)

// Writer writes the events of kscope iotrace in one format: JSON Lines
// every kind of event (event.Kinds), told apart by their "kind" field;
// the table and CSV the kinds they have rows for (rows), in the same
// columns (see CommitRow, SyncRow, BlockRow).
type Writer interface {
	// Handlers write each kind of event the format shows.
	Handlers() event.Handlers
	Flush() error
}

// rows are how the table and CSV show each kind of event: as a row of
// the table, and as a CSV record. A kind without an entry is shown in
// JSON only.
var rows = []kindRows{
	rowsOf(event.Writes, Row, writeRecord),
	rowsOf(event.Commits, CommitRow, commitRecord),
	rowsOf(event.Syncs, SyncRow, syncRecord),
	rowsOf(event.Blocks, BlockRow, blockRecord),
	rowsOf(event.KernelWaits, WaitRow, waitRecord),
	rowsOf(event.Steals, StealRow, stealRecord),
	rowsOf(event.RunDelays, RunDelayRow, runDelayRecord),
	rowsOf(event.Wakeups, WakeupRow, wakeupRecord),
	rowsOf(event.ConnThreads, ConnThreadRow, connThreadRecord),
	rowsOf(event.PageCacheAddsKind, PageCacheRow, pageCacheRecord),
}

// kindRows has h pass one kind's events, as cells, to out: table rows,
// or with csv CSV records.
type kindRows func(h *event.Handlers, out func(cells []string) error, csv bool)

func rowsOf[T any](k *event.KindOf[T], row, record func(*T) []string) kindRows {
	return func(h *event.Handlers, out func([]string) error, csv bool) {
		cells := row
		if csv {
			cells = record
		}
		k.On(h, func(v *T) error { return out(cells(v)) })
	}
}

// NewWriter returns a writer for format "table", "json" or "csv".
func NewWriter(w io.Writer, format string) (Writer, error) {
	switch format {
	case "table":
		return newTableWriter(w), nil
	case "json":
		return jsonWriter{output.NewJSONLines(w)}, nil
	case "csv":
		return newCSVWriter(w), nil
	}
	return nil, output.UnknownFormat(format)
}

type jsonWriter struct{ *output.JSONLines }

func (j jsonWriter) Handlers() event.Handlers {
	var h event.Handlers
	for _, k := range event.Kinds() {
		k.Bind(&h, j.Encode)
	}
	return h
}

var tableHeader = []string{"START TIME", "END TIME", "LATENCY(ms)", "TID", "THREAD", "OP", "BYTES", "OFF_KB", "FILE"}

// tableWriter aligns columns over blocks of rows, flushing every few
// hundred rows since a stream cannot know its widest cell in advance.
type tableWriter struct {
	tw   *tabwriter.Writer
	rows int
}

func newTableWriter(w io.Writer) *tableWriter {
	t := &tableWriter{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	fmt.Fprintln(t.tw, strings.Join(tableHeader, "\t"))
	return t
}

// Row returns the table cells of an event. Times are local wall-clock
// times of day with microseconds, as in kscope requests.
func Row(w *event.Write) []string {
	off := "-"
	if w.Offset >= 0 {
		off = strconv.FormatInt(w.Offset/1024, 10)
	}
	bytes := strconv.FormatInt(w.Bytes, 10)
	if w.Error != "" {
		bytes = w.Error
	}
	return []string{w.Start.Local().Format(output.TimeOfDay), w.End.Local().Format(output.TimeOfDay),
		strconv.FormatFloat(w.LatencyMs, 'f', 3, 64), strconv.Itoa(w.TID), output.Escape(w.Thread),
		w.Op, bytes, off, output.Escape(w.File)}
}

func (t *tableWriter) Handlers() event.Handlers {
	var h event.Handlers
	for _, bind := range rows {
		bind(&h, t.row, false)
	}
	return h
}

func (t *tableWriter) row(cells []string) error {
	if _, err := fmt.Fprintln(t.tw, strings.Join(cells, "\t")); err != nil {
		return err
	}
	if t.rows++; t.rows >= 512 {
		t.rows = 0
		return t.tw.Flush()
	}
	return nil
}

func (t *tableWriter) Flush() error { return t.tw.Flush() }

var csvHeader = []string{"start", "end", "latency_ms", "tid", "thread", "op", "bytes", "offset", "file", "topic", "partition", "dev", "error"}

// csvWriter writes the JSON fields as columns, with RFC 3339 times.
type csvWriter struct{ w *csv.Writer }

func newCSVWriter(w io.Writer) *csvWriter {
	c := &csvWriter{w: csv.NewWriter(w)}
	c.w.Write(csvHeader)
	return c
}

// writeRecord is the CSV record of a write: its JSON fields.
func writeRecord(w *event.Write) []string {
	return []string{w.Start.Format(time.RFC3339Nano), w.End.Format(time.RFC3339Nano),
		strconv.FormatFloat(w.LatencyMs, 'f', 6, 64), strconv.Itoa(w.TID), output.Escape(w.Thread), w.Op,
		strconv.FormatInt(w.Bytes, 10), strconv.FormatInt(w.Offset, 10), output.Escape(w.File),
		w.Topic, strconv.Itoa(int(w.Partition)), w.Dev, w.Error}
}

func (c *csvWriter) Handlers() event.Handlers {
	var h event.Handlers
	for _, bind := range rows {
		bind(&h, c.w.Write, true)
	}
	return h
}

func (c *csvWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}

// summaryJSON is one line of a JSON summary. The quantiles are upper
// bounds (log2 histogram slots).
type summaryJSON struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Op        string  `json:"op"`
	Dev       string  `json:"dev"`
	Count     uint64  `json:"count"`
	Bytes     uint64  `json:"bytes"`
	Errors    uint64  `json:"errors"`
	MeanMs    float64 `json:"mean_ms"`
	P50Ms     float64 `json:"p50_le_ms"`
	P99Ms     float64 `json:"p99_le_ms"`
	P999Ms    float64 `json:"p99_9_le_ms"`
	MaxMs     float64 `json:"max_le_ms"`
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func ms(d time.Duration) string { return strconv.FormatFloat(msf(d), 'f', 3, 64) }

// WriteSummaries prints per topic-partition and operation counts and
// latency quantiles, as a table or JSON Lines ("csv" is a table too: the
// summary is for people). Quantiles are upper bounds: the edges of the
// in-kernel log2 histograms' slots.
func WriteSummaries(w io.Writer, format string, sums []iotrace.Summary) error {
	if format == "json" {
		j := output.NewJSONLines(w)
		for i := range sums {
			s := &sums[i]
			if err := j.Encode(summaryJSON{s.Topic, s.Partition, s.Op, s.Dev, s.Count, s.Bytes, s.Errors,
				msf(s.Mean()), msf(s.Quantile(0.5)), msf(s.Quantile(0.99)), msf(s.Quantile(0.999)), msf(s.Quantile(1))}); err != nil {
				return err
			}
		}
		return j.Flush()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TOPIC\tPARTITION\tOP\tDEV\tCOUNT\tBYTES\tERRORS\tMEAN(ms)\tp50<=(ms)\tp99<=(ms)\tp99.9<=(ms)\tMAX<=(ms)\t")
	for i := range sums {
		s := &sums[i]
		topic, part := output.Escape(s.Topic), strconv.Itoa(int(s.Partition))
		if s.Topic == "" {
			topic, part = "(other files)", "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", topic, part, s.Op, s.Dev,
			s.Count, s.Bytes, s.Errors, ms(s.Mean()), ms(s.Quantile(0.5)), ms(s.Quantile(0.99)), ms(s.Quantile(0.999)), ms(s.Quantile(1)))
	}
	return tw.Flush()
}
