package segout

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
)

// IndexWriter writes the entries of .index and .timeindex files.
type IndexWriter interface {
	// Write writes one entry of file; time says whether file is a time
	// index.
	Write(file string, time bool, e *event.IndexEntry) error
	Flush() error
}

// NewIndexWriter returns a writer for format "table", "json" or "csv".
func NewIndexWriter(w io.Writer, format string) (IndexWriter, error) {
	switch format {
	case "table":
		bw := bufio.NewWriterSize(w, 64<<10)
		return &indexTable{bw: bw, tw: tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)}, nil
	case "json":
		return &indexJSON{j: output.NewJSONLines(w)}, nil
	case "csv":
		return &indexCSV{w: csv.NewWriter(w)}, nil
	}
	return nil, output.UnknownFormat(format)
}

type indexJSON struct{ j *output.JSONLines }

func (x *indexJSON) Write(_ string, _ bool, e *event.IndexEntry) error { return x.j.Encode(e) }
func (x *indexJSON) Flush() error                                      { return x.j.Flush() }

type indexTable struct {
	bw      *bufio.Writer
	tw      *tabwriter.Writer
	file    string
	started bool
}

func (t *indexTable) Write(file string, time bool, e *event.IndexEntry) error {
	if !t.started || file != t.file {
		if t.started {
			fmt.Fprintln(t.tw)
		}
		t.started, t.file = true, file
		fmt.Fprintf(t.tw, "# %s\n", output.Escape(file))
		if time {
			fmt.Fprintln(t.tw, "INDEX_POSITION\tTIMESTAMP\tOFFSET")
		} else {
			fmt.Fprintln(t.tw, "INDEX_POSITION\tOFFSET\tPOSITION")
		}
	}
	var err error
	if time {
		_, err = fmt.Fprintf(t.tw, "%d\t%d\t%d\n", e.Pos, *e.Timestamp, e.Offset)
	} else {
		_, err = fmt.Fprintf(t.tw, "%d\t%d\t%d\n", e.Pos, e.Offset, *e.Position)
	}
	return err
}

func (t *indexTable) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	return t.bw.Flush()
}

type indexCSV struct {
	w       *csv.Writer
	started bool
}

func (c *indexCSV) Write(file string, _ bool, e *event.IndexEntry) error {
	if !c.started {
		c.started = true
		if err := c.w.Write([]string{"file", "index_position", "offset", "position", "timestamp"}); err != nil {
			return err
		}
	}
	opt := func(v *int64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatInt(*v, 10)
	}
	return c.w.Write([]string{output.Escape(file), strconv.FormatInt(e.Pos, 10), strconv.FormatInt(e.Offset, 10), opt(e.Position), opt(e.Timestamp)})
}

func (c *indexCSV) Flush() error {
	c.w.Flush()
	return c.w.Error()
}
