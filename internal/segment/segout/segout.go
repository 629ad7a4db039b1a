// Package segout prints what package segment reads, in the formats every
// kscope command offers: an aligned table (text/tabwriter) for people,
// JSON Lines (encoding/json) and CSV (encoding/csv) for programs. Strings
// from files are escaped (output.Escape) in the table and CSV; JSON's own
// escaping covers JSON Lines.
package segout

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
)

// BatchWriter writes segment batches in one format.
type BatchWriter interface {
	// Write writes one batch of file (and its records, when set).
	Write(file string, b *event.SegmentBatch) error
	Flush() error
}

// NewBatchWriter returns a writer for format "table", "json" or "csv".
// records says whether batches carry records (a column set of their own
// in CSV); ids whether they carry message ids (lookup).
func NewBatchWriter(w io.Writer, format string, records, ids bool) (BatchWriter, error) {
	switch format {
	case "table":
		// tabwriter writes cell by cell: buffer, or a dump is mostly
		// system calls.
		bw := bufio.NewWriterSize(w, 64<<10)
		return &batchTable{bw: bw, tw: tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0), ids: ids}, nil
	case "json":
		return &jsonLines{JSONLines: output.NewJSONLines(w)}, nil
	case "csv":
		return &batchCSV{w: csv.NewWriter(w), records: records, ids: ids}, nil
	}
	return nil, output.UnknownFormat(format)
}

var batchColumns = []string{"position", "size", "base_offset", "last_offset", "count", "magic", "compression",
	"crc_valid", "producer_id", "producer_epoch", "base_sequence", "partition_leader_epoch", "transactional",
	"control", "first_timestamp", "max_timestamp"}

var recordColumns = []string{"offset", "timestamp", "key_size", "value_size", "headers", "control_type", "coordinator_epoch", "key", "value"}

func batchCells(b *event.SegmentBatch) []string {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []string{i(b.Position), strconv.Itoa(b.Size), i(b.BaseOffset), i(b.LastOffset), strconv.Itoa(b.Count),
		strconv.Itoa(int(b.Magic)), b.Compression, strconv.FormatBool(b.CRCValid), i(b.ProducerID),
		strconv.Itoa(int(b.ProducerEpoch)), i(int64(b.BaseSequence)), i(int64(b.PartitionLeaderEpoch)),
		strconv.FormatBool(b.Transactional), strconv.FormatBool(b.Control), i(b.FirstTimestamp), i(b.MaxTimestamp)}
}

// appendBatchRow appends batchCells(b) separated by tabs, without a
// string per cell: a dump of a large segment prints tens of thousands.
func appendBatchRow(dst []byte, b *event.SegmentBatch) []byte {
	tab := func(dst []byte, v int64) []byte { return strconv.AppendInt(append(dst, '\t'), v, 10) }
	dst = strconv.AppendInt(dst, b.Position, 10)
	dst = tab(dst, int64(b.Size))
	dst = tab(dst, b.BaseOffset)
	dst = tab(dst, b.LastOffset)
	dst = tab(dst, int64(b.Count))
	dst = tab(dst, int64(b.Magic))
	dst = append(append(dst, '\t'), b.Compression...)
	dst = strconv.AppendBool(append(dst, '\t'), b.CRCValid)
	dst = tab(dst, b.ProducerID)
	dst = tab(dst, int64(b.ProducerEpoch))
	dst = tab(dst, int64(b.BaseSequence))
	dst = tab(dst, int64(b.PartitionLeaderEpoch))
	dst = strconv.AppendBool(append(dst, '\t'), b.Transactional)
	dst = strconv.AppendBool(append(dst, '\t'), b.Control)
	dst = tab(dst, b.FirstTimestamp)
	return tab(dst, b.MaxTimestamp)
}

// headerText renders headers as key=value pairs separated by spaces,
// escaped; a header with a null value prints as its key alone.
func headerText(hs event.Headers) string {
	parts := make([]string, len(hs))
	for i, h := range hs {
		if h.Value == nil {
			parts[i] = output.Escape(h.Key)
		} else {
			parts[i] = output.Escape(h.Key) + "=" + output.Escape(*h.Value)
		}
	}
	return strings.Join(parts, " ")
}

func recordCells(r *event.SegmentRecord) []string {
	opt := func(s *string) string {
		if s == nil {
			return ""
		}
		return output.Escape(*s)
	}
	epoch := ""
	if r.CoordinatorEpoch != nil {
		epoch = strconv.Itoa(int(*r.CoordinatorEpoch))
	}
	return []string{strconv.FormatInt(r.Offset, 10), strconv.FormatInt(r.Timestamp, 10), strconv.Itoa(r.KeySize),
		strconv.Itoa(r.ValueSize), headerText(r.Headers), r.ControlType, epoch, opt(r.Key), opt(r.Value)}
}

func idsText(ids []string) string {
	esc := make([]string, len(ids))
	for i, id := range ids {
		esc[i] = output.Escape(id)
	}
	return strings.Join(esc, " ")
}

// jsonLines writes one batch per line, with the batch encoder that appends
// to a reused buffer (a dump writes millions of records).
type jsonLines struct {
	*output.JSONLines
	buf []byte
}

func (j *jsonLines) Write(_ string, b *event.SegmentBatch) error {
	j.buf = append(appendBatchJSON(j.buf[:0], b), '\n')
	return j.WriteLine(j.buf)
}

// batchTable prints a header line per file, one aligned row per batch
// and, with records, one indented line per record under its batch.
type batchTable struct {
	line []byte
	bw   *bufio.Writer
	tw   *tabwriter.Writer
	file string
	ids  bool
	rows int
}

var tableColumns = []string{"POSITION", "SIZE", "BASE_OFFSET", "LAST_OFFSET", "COUNT", "MAGIC", "COMPRESSION",
	"CRC_VALID", "PRODUCER_ID", "PRODUCER_EPOCH", "BASE_SEQUENCE", "LEADER_EPOCH", "TXN", "CONTROL",
	"FIRST_TIMESTAMP", "MAX_TIMESTAMP"}

func (t *batchTable) Write(file string, b *event.SegmentBatch) error {
	if file != t.file || t.rows == 0 {
		if t.file != "" {
			fmt.Fprintln(t.tw)
		}
		t.file = file
		fmt.Fprintf(t.tw, "# %s\n", output.Escape(file))
		head := strings.Join(tableColumns, "\t")
		if t.ids {
			head += "\tMESSAGE_IDS"
		}
		fmt.Fprintln(t.tw, head)
	}
	t.rows++
	t.line = appendBatchRow(t.line[:0], b)
	if t.ids {
		t.line = append(append(t.line, '\t'), idsText(b.MessageIDs)...)
	}
	if _, err := t.tw.Write(append(t.line, '\n')); err != nil {
		return err
	}
	if len(b.Records) > 0 {
		// Record lines have no tabs and end the column block anyway:
		// flush the batch row and write them past the tabwriter.
		if err := t.tw.Flush(); err != nil {
			return err
		}
		for i := range b.Records {
			t.line = appendRecordLine(t.line[:0], &b.Records[i])
			if _, err := t.bw.Write(t.line); err != nil {
				return err
			}
		}
	}
	if t.rows%512 == 0 {
		return t.tw.Flush()
	}
	return nil
}

// appendRecordLine appends a record's table line, built without fmt: a
// dump prints millions.
func appendRecordLine(b []byte, r *event.SegmentRecord) []byte {
	b = append(b, "  | offset: "...)
	b = strconv.AppendInt(b, r.Offset, 10)
	b = append(b, " timestamp: "...)
	b = strconv.AppendInt(b, r.Timestamp, 10)
	b = append(b, " key_size: "...)
	b = strconv.AppendInt(b, int64(r.KeySize), 10)
	b = append(b, " value_size: "...)
	b = strconv.AppendInt(b, int64(r.ValueSize), 10)
	b = append(b, " headers: ["...)
	b = append(b, headerText(r.Headers)...)
	b = append(b, ']')
	if r.ControlType != "" {
		b = append(b, " control: "...)
		b = append(b, r.ControlType...)
		if r.CoordinatorEpoch != nil {
			b = append(b, " coordinator_epoch: "...)
			b = strconv.AppendInt(b, int64(*r.CoordinatorEpoch), 10)
		}
	}
	if r.Key != nil {
		b = append(b, " key: "...)
		b = append(b, output.Escape(*r.Key)...)
	}
	if r.Value != nil {
		b = append(b, " value: "...)
		b = append(b, output.Escape(*r.Value)...)
	}
	return append(b, '\n')
}

func (t *batchTable) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	return t.bw.Flush()
}

// batchCSV writes one line per batch, or with records one per record
// (the batch's columns repeated; a batch without records still gets a
// line with empty record columns).
type batchCSV struct {
	w       *csv.Writer
	records bool
	ids     bool
	started bool
}

func (c *batchCSV) Write(file string, b *event.SegmentBatch) error {
	// The header line comes with the first row, so that a dump of index
	// files only does not start with the batch header.
	if !c.started {
		c.started = true
		head := append([]string{"file"}, batchColumns...)
		if c.ids {
			head = append(head, "message_ids")
		}
		if c.records {
			head = append(head, recordColumns...)
		}
		if err := c.w.Write(head); err != nil {
			return err
		}
	}
	row := append([]string{output.Escape(file)}, batchCells(b)...)
	if c.ids {
		row = append(row, idsText(b.MessageIDs))
	}
	if !c.records || len(b.Records) == 0 {
		if c.records {
			row = append(row, make([]string, len(recordColumns))...)
		}
		return c.w.Write(row)
	}
	for i := range b.Records {
		if err := c.w.Write(append(row[:len(row):len(row)], recordCells(&b.Records[i])...)); err != nil {
			return err
		}
	}
	return nil
}

func (c *batchCSV) Flush() error {
	c.w.Flush()
	return c.w.Error()
}
