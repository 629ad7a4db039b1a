package output

import (
	"bufio"
	"encoding/json"
	"io"
)

// JSONLines writes values as JSON Lines (one object per line) through a
// buffer. encoding/json escapes control characters, so strings from the
// wire or from disk are safe to print.
type JSONLines struct {
	bw *bufio.Writer
}

// NewJSONLines returns a JSON Lines writer on w.
func NewJSONLines(w io.Writer) *JSONLines {
	return &JSONLines{bw: bufio.NewWriterSize(w, 64<<10)}
}

// Encode writes v as one line.
func (j *JSONLines) Encode(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	j.bw.Write(b)
	return j.bw.WriteByte('\n')
}

// WriteLine writes an already encoded line (for encoders that append JSON
// to a reused buffer on hot paths); line must end with a newline.
func (j *JSONLines) WriteLine(line []byte) error {
	_, err := j.bw.Write(line)
	return err
}

// Flush writes out what is buffered.
func (j *JSONLines) Flush() error { return j.bw.Flush() }
