package output

import (
	"io"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/latency"
)

// RequestSink takes decoded requests, keeps those its filter matches
// (their partitions narrowed to the filter's topics) and either writes
// them as rows or adds them to a latency summary printed at the end: what
// 'kscope requests' does with each request.
type RequestSink struct {
	w       io.Writer
	filter  event.RequestFilter
	writer  RequestWriter    // rows; nil with a summary
	summary *latency.Summary // nil without one
	err     error            // the first write error
}

// NewRequestSink returns a sink writing to w: rows in format, or with
// summaryTop > 0 a summary listing that many of the slowest requests (the
// format is then not used).
func NewRequestSink(w io.Writer, format string, filter event.RequestFilter, summaryTop int) (*RequestSink, error) {
	s := &RequestSink{w: w, filter: filter}
	if summaryTop > 0 {
		s.summary = latency.NewSummary(summaryTop)
		return s, nil
	}
	var err error
	if s.writer, err = NewRequestWriter(w, format); err != nil {
		return nil, err
	}
	return s, nil
}

// Add takes one request. After a write error it writes nothing more;
// Close returns that error.
func (s *RequestSink) Add(r *event.Request) {
	if !s.filter.Match(r) {
		return
	}
	s.filter.KeepTopics(r)
	if s.summary != nil {
		s.summary.Add(r)
		return
	}
	if s.err == nil {
		s.err = s.writer.Write(r)
	}
}

// Close prints the summary, or flushes the rows, and returns the first
// error writing.
func (s *RequestSink) Close() error {
	if s.summary != nil {
		// The summary is written whole at the end: a row's earlier
		// error cannot have happened.
		return WriteSummary(s.w, s.summary)
	}
	if ferr := s.writer.Flush(); s.err == nil {
		s.err = ferr
	}
	return s.err
}
