package cli

import (
	"fmt"
	"io"
	"strings"

	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/source"
)

// tlsKeyLogHelp is the --tls-keylog flag's help, the same on every command
// that decodes captures.
const tlsKeyLogHelp = "NSS key log (SSLKEYLOGFILE format) with the secrets of TLS connections to decrypt: a file, a directory of *.log key logs, or a pipe (read once); a pcapng capture's own Decryption Secrets Blocks are used too"

// printCaptureWarnings prints, one line each, the damaged captures read
// as far as they went and the TLS connections not decrypted.
func printCaptureWarnings(stderr io.Writer, res source.Result) {
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "kscope: warning: %s\n", output.Escape(w.Error()))
	}
	for _, w := range res.TLSWarnings() {
		fmt.Fprintf(stderr, "kscope: warning: %s\n", output.Escape(w))
	}
}

// printFooter prints the counters' footer, each line prefixed.
func printFooter(stderr io.Writer, res source.Result) {
	for line := range strings.Lines(res.FormatFooter()) {
		fmt.Fprintf(stderr, "kscope: %s\n", output.Escape(strings.TrimSuffix(line, "\n")))
	}
}
