package cli

import (
	"errors"
	"fmt"
	"io"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// Default names of the files written when an output flag names a
// directory: "-o DIR" means "into DIR".
const (
	reportDefaultName      = "report.html"
	benchReportDefaultName = "bench-report.html"
	benchRunDefaultName    = "result.json"
	labFSDefaultName       = "labfs.html"
	flameDefaultName       = "flame.html"
	profileDefaultName     = "profile.jfr"
)

// checkOutput makes sure, before any work, that the output flag's target
// can be written without harming anything (see safefile.Target): a
// refusal is bad input, and names the flag. It returns the path the
// output will have.
func checkOutput(flag string, t safefile.Target) (string, error) {
	path, err := t.Check()
	if err != nil {
		return "", badInput(fmt.Errorf("%s: %w", flag, err))
	}
	return path, nil
}

// writeOutput writes the output flag's file through safefile.Write and
// returns the path written. The target is checked again: it may have
// changed during the run.
func writeOutput(flag string, t safefile.Target, write func(io.Writer) error) (string, error) {
	path, err := safefile.Write(t, write)
	switch {
	case errors.Is(err, safefile.ErrRefused):
		return "", badInput(fmt.Errorf("%s: %w", flag, err))
	case err != nil:
		return "", fmt.Errorf("%s: %w", flag, err)
	}
	return path, nil
}

// distinctInputs refuses an input file or recording given twice (also as
// a hard link or another spelling): it would be read twice.
func distinctInputs(lists ...[]string) error {
	var all []string
	for _, l := range lists {
		all = append(all, l...)
	}
	if err := safefile.Distinct(all); err != nil {
		return badInput(err)
	}
	return nil
}
