package output

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// RequestWriter writes request events in one format.
type RequestWriter interface {
	Write(r *event.Request) error
	Flush() error
}

// Formats lists the output format names every kscope writer accepts.
var Formats = []string{"table", "json", "csv"}

// UnknownFormat is the error for a format name not in Formats.
func UnknownFormat(format string) error {
	return fmt.Errorf("unknown format %q (want %s)", format, strings.Join(Formats, ", "))
}

// NewRequestWriter returns a writer for format "table", "json" or "csv".
func NewRequestWriter(w io.Writer, format string) (RequestWriter, error) {
	switch format {
	case "table":
		return newTableWriter(w), nil
	case "json":
		return jsonWriter{NewJSONLines(w), new([]byte)}, nil
	case "csv":
		return newCSVWriter(w), nil
	}
	return nil, UnknownFormat(format)
}

// TimeOfDay is the table's time format: wall clock with microseconds.
const TimeOfDay = "15:04:05.000000"

// jsonWriter writes one request per line, encoded by AppendRequestJSON
// into a reused buffer.
type jsonWriter struct {
	*JSONLines
	buf *[]byte
}

func (j jsonWriter) Write(r *event.Request) error {
	b, err := AppendRequestJSON((*j.buf)[:0], r)
	if err != nil {
		return err
	}
	*j.buf = append(b, '\n')
	return j.WriteLine(*j.buf)
}

var tableHeader = []string{"ARRIVAL TIME", "END TIME", "LATENCY(ms)", "API", "CLIENT", "TOPIC", "PARTITION", "RECORDS", "MESSAGE_ID"}

// tableWriter aligns columns over blocks of rows: a streaming output
// cannot know the widest cell in advance, so it flushes every few hundred
// rows and keeps minimum widths so that blocks stay aligned in practice.
type tableWriter struct {
	out  io.Writer
	tw   *tabwriter.Writer
	rows int
}

func newTableWriter(w io.Writer) *tableWriter {
	t := &tableWriter{out: w}
	t.tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(t.tw, strings.Join(tableHeader, "\t"))
	return t
}

// Row returns the table cells for a request: one row per partition, or
// one row when the request names none.
func Row(r *event.Request) [][]string {
	arrival := r.Arrival.Format(TimeOfDay)
	end, latency := "-", "-"
	if r.Answered {
		end = r.End.Format(TimeOfDay)
		latency = strconv.FormatFloat(r.LatencyMs, 'f', 3, 64)
	}
	if r.ClockStep {
		latency = "clock-step" // the response is timestamped before the request
	}
	client := Escape(r.Client)
	if r.ClientID != "" {
		client += " " + Escape(r.ClientID)
	}
	api := r.API
	if r.Partial {
		api += "*"
	}
	if len(r.Partitions) == 0 {
		return [][]string{{arrival, end, latency, api, client, "-", "-", "-", "-"}}
	}
	rows := make([][]string, 0, len(r.Partitions))
	for i := range r.Partitions {
		p := &r.Partitions[i]
		topic := p.Topic
		if topic == "" {
			topic = p.TopicID
		}
		rows = append(rows, []string{arrival, end, latency, api, client, Escape(topic),
			strconv.Itoa(int(p.Partition)), strconv.Itoa(p.Records), messageIDCell(p.MessageIDs)})
	}
	return rows
}

func messageIDCell(ids []string) string {
	switch len(ids) {
	case 0:
		return "-"
	case 1:
		return Escape(ids[0])
	}
	return Escape(ids[0]) + " +" + strconv.Itoa(len(ids)-1)
}

func (t *tableWriter) Write(r *event.Request) error {
	for _, row := range Row(r) {
		if _, err := fmt.Fprintln(t.tw, strings.Join(row, "\t")); err != nil {
			return err
		}
		t.rows++
	}
	if t.rows >= 512 {
		t.rows = 0
		return t.tw.Flush()
	}
	return nil
}

func (t *tableWriter) Flush() error { return t.tw.Flush() }

var csvHeader = []string{"arrival", "end", "latency_ms", "client", "broker", "api", "api_key", "api_version",
	"correlation_id", "client_id", "request_bytes", "response_bytes", "throttle_ms", "error_code", "acks",
	"topic", "topic_id", "partition", "records", "bytes", "message_ids", "partition_error_code", "answered", "partial", "principal"}

// csvWriter writes one line per request partition (one line for a request
// without partitions), with RFC 3339 times.
type csvWriter struct {
	w *csv.Writer
}

func newCSVWriter(w io.Writer) *csvWriter {
	c := &csvWriter{w: csv.NewWriter(w)}
	c.w.Write(csvHeader)
	return c
}

func (c *csvWriter) Write(r *event.Request) error {
	end, latency := "", ""
	if r.Answered {
		end = r.End.Format(time.RFC3339Nano)
		latency = strconv.FormatFloat(r.LatencyMs, 'f', 6, 64)
	}
	if r.ClockStep {
		latency = "" // the response is timestamped before the request: no latency
	}
	opt := func(v *int16) string {
		if v == nil {
			return ""
		}
		return strconv.Itoa(int(*v))
	}
	base := []string{r.Arrival.Format(time.RFC3339Nano), end, latency, r.Client, r.Broker, r.API,
		strconv.Itoa(int(r.APIKey)), strconv.Itoa(int(r.APIVersion)), strconv.Itoa(int(r.CorrelationID)),
		Escape(r.ClientID), strconv.Itoa(r.RequestBytes), strconv.Itoa(r.ResponseBytes),
		strconv.Itoa(int(r.ThrottleMs)), opt(r.ErrorCode), opt(r.Acks)}
	tail := []string{strconv.FormatBool(r.Answered), strconv.FormatBool(r.Partial), Escape(r.Principal)}
	if len(r.Partitions) == 0 {
		return c.w.Write(append(append(base, "", "", "", "", "", "", ""), tail...))
	}
	for i := range r.Partitions {
		p := &r.Partitions[i]
		ids := make([]string, len(p.MessageIDs))
		for j, id := range p.MessageIDs {
			ids[j] = Escape(id)
		}
		row := append(append([]string(nil), base...), Escape(p.Topic), p.TopicID, strconv.Itoa(int(p.Partition)),
			strconv.Itoa(p.Records), strconv.Itoa(p.Bytes), strings.Join(ids, " "), strconv.Itoa(int(p.ErrorCode)))
		if err := c.w.Write(append(row, tail...)); err != nil {
			return err
		}
	}
	return nil
}

func (c *csvWriter) Flush() error {
	c.w.Flush()
	return c.w.Error()
}
