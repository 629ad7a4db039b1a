package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/source"
)

// viewInput is what the views on requests (clients, consumers) read:
// capture files, or one recording.
type viewInput struct {
	ports     []uint
	maxFrame  int
	quiet     bool
	tlsKeyLog string
}

// read decodes args, a recording directory or capture files, into add.
func (in viewInput) read(stderr io.Writer, args []string, add func(*event.Request)) error {
	if dir, ok := recordingDir(args); ok {
		return in.readRecording(stderr, dir, add)
	}
	return in.readCaptures(stderr, args, add)
}

func (in viewInput) readRecording(stderr io.Writer, dir string, add func(*event.Request)) error {
	meta, err := recording.ReadMeta(dir)
	if err != nil {
		return badInput(err)
	}
	rd := recording.Reader{Window: meta.Window(), Tally: &recording.Tally{}}
	if err := rd.Requests(filepath.Join(dir, recording.RequestsFile), add); err != nil {
		return badInput(fmt.Errorf("reading requests: %w", err))
	}
	warnLeftOut(stderr, rd.Tally.Warnings(), in.quiet)
	return nil
}

func (in viewInput) readCaptures(stderr io.Writer, files []string, add func(*event.Request)) error {
	cfg, err := wireConfig(in.ports, "")
	if err != nil {
		return err
	}
	cfg.MaxFrameBytes = in.maxFrame
	cfg.MaxKeepBytes = min(cfg.MaxKeepBytes, in.maxFrame)
	if err := distinctInputs(files); err != nil {
		return err
	}
	opts := source.Options{Wire: cfg, TLSKeyLog: in.tlsKeyLog}
	var finishBar func()
	if !in.quiet && isTerminal(stderr) {
		opts.Progress, finishBar = progressBar(stderr)
	}
	res, err := source.ReadFiles(files, opts, add)
	if finishBar != nil {
		finishBar()
	}
	if err != nil {
		return badInput(err)
	}
	if !in.quiet {
		printCaptureWarnings(stderr, res)
		printFooter(stderr, res)
	}
	return nil
}

// recordingDir reports whether args name one recording directory.
func recordingDir(args []string) (string, bool) {
	if len(args) != 1 {
		return "", false
	}
	st, err := os.Stat(args[0])
	return args[0], err == nil && st.IsDir()
}

// viewArgs is the argument check of the views on requests: capture files
// or a recording, unless --rules only prints the rules.
func viewArgs(rules *bool) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) == 0 && !*rules {
			return errors.New("give capture files or a recording directory (or --rules)")
		}
		return nil
	}
}
