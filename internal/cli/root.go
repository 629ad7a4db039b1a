// Package cli wires kscope's commands (cobra) to the packages that do the
// work. It holds flag parsing, exit codes and terminal concerns only.
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/output"
)

// Exit codes shared by all commands.
const (
	ExitOK       = 0
	ExitFailure  = 1 // the command ran and found a problem (or failed)
	ExitBadInput = 2 // unusable input or bad flags
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func badInput(err error) error { return &exitError{code: ExitBadInput, err: err} }

// Main runs kscope with args (without the program name) and returns the
// process exit code.
func Main(args []string, stdout, stderr io.Writer) int {
	root := newRoot(stdout, stderr)
	root.SetArgs(args)
	err := root.Execute()
	if err == nil {
		return ExitOK
	}
	printError(stderr, err)
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return ExitFailure
}

// printError prints the error that ended the command, escaped: it may
// hold a file name or bytes from the input, which must not reach the
// terminal as control characters. The errors of an errors.Join go one to
// a line.
func printError(stderr io.Writer, err error) {
	for _, e := range errorLines(err) {
		fmt.Fprintf(stderr, "kscope: %s\n", output.Escape(e.Error()))
	}
}

// errorLines splits err into the errors it joins when it is an
// errors.Join under wrappers that add nothing to its text.
func errorLines(err error) []error {
	for e := err; e != nil && e.Error() == err.Error(); e = errors.Unwrap(e) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			return j.Unwrap()
		}
	}
	return []error{err}
}

func newRoot(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "kscope",
		Short:         "Find out why a Kafka cluster is slow, and prove the fix",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return badInput(fmt.Errorf("%w (see '%s --help')", err, c.CommandPath()))
	})
	root.AddCommand(newRequestsCmd(), newLabCmd(), newSegmentCmd(), newIotraceCmd(), newRecordCmd(), newExplainCmd(), newBenchCmd(), newReportCmd(), newAgentCmd(), newModelCmd(), newUseCmd(), newProfileCmd(), newDoctorCmd(), newClientsCmd(), newConsumersCmd())
	strictUsage(root)
	return root
}

// isTerminal reports whether w is a terminal (for progress bars).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
