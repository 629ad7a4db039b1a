package output

import "io"

// ErrWriter writes to W until a write fails, and keeps that first error
// in Err: a table written line by line checks for failure once, at the
// end. After a failure it writes nothing and reports success, so that
// fmt.Fprintf's callers need no check of their own.
type ErrWriter struct {
	W   io.Writer
	Err error
}

func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.Err != nil {
		return len(p), nil
	}
	_, e.Err = e.W.Write(p)
	return len(p), nil
}
