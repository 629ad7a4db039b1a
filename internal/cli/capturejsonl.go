package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/source"
)

// captureInput is how explain and report are told about capture files
// instead of a recording: the files, and what the decoder needs to know.
type captureInput struct {
	pcaps           []string
	ports           []uint
	messageIDHeader string
	logDirs         []string // name topics given only by id
	tlsKeyLog       string
}

// decoded is a capture decoded into a requests file.
type decoded struct {
	path string
	// start and end span the requests (first arrival, last end): the
	// time axis a capture has instead of meta.json's.
	start, end time.Time
}

// decodeToTempJSONL decodes the captures into a temporary JSON Lines file
// (explain's scan reads its requests by byte position, so a file rather
// than a stream). The caller removes the file with the returned cleanup.
func decodeToTempJSONL(in captureInput, stderr io.Writer, quiet bool) (decoded, func(), error) {
	tmp, err := os.CreateTemp("", "kscope-requests-*.jsonl")
	if err != nil {
		return decoded{}, nil, fmt.Errorf("decoding captures: %w", err)
	}
	cleanup := func() { os.Remove(tmp.Name()) }
	d, err := decodeToJSONL(tmp, in, stderr, quiet)
	if err != nil {
		tmp.Close()
		cleanup()
		return decoded{}, nil, err
	}
	if err := tmp.Close(); err != nil {
		cleanup()
		return decoded{}, nil, fmt.Errorf("decoding captures: %w", err)
	}
	d.path = tmp.Name()
	return d, cleanup, nil
}

// decodeToJSONL runs capture files through the request decoder into w as
// JSON Lines, as 'kscope requests --format json' would.
func decodeToJSONL(w io.Writer, in captureInput, stderr io.Writer, quiet bool) (decoded, error) {
	var d decoded
	cfg, err := wireConfig(in.ports, in.messageIDHeader)
	if err != nil {
		return d, err
	}
	topics, err := topicNames(context.Background(), in.logDirs, nil)
	if err != nil {
		return d, err
	}
	j := output.NewJSONLines(w)
	var writeErr error
	res, err := source.ReadFiles(in.pcaps, source.Options{Wire: cfg, Topics: topics, TLSKeyLog: in.tlsKeyLog}, func(r *event.Request) {
		if d.start.IsZero() || r.Arrival.Before(d.start) {
			d.start = r.Arrival
		}
		if r.End.After(d.end) {
			d.end = r.End
		}
		if writeErr == nil {
			writeErr = j.Encode(r)
		}
	})
	if err != nil {
		return d, badInput(err)
	}
	if ferr := j.Flush(); writeErr == nil {
		writeErr = ferr
	}
	if !quiet {
		printCaptureWarnings(stderr, res)
	}
	return d, writeErr
}
