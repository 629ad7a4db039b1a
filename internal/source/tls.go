package source

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/tlskeys"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TLSResult says what decrypting TLS listeners' connections had to go
// on, and which connections it could not decrypt.
type TLSResult struct {
	// KeyLog is the key log given ("" for none), KeyLogFrom how to name
	// it ("key log k.log", "the broker's key log ..."), and KeyLogLines
	// the counts of its own lines.
	KeyLog      string
	KeyLogFrom  string
	KeyLogLines tlskeys.Stats
	// KeyLogDir: the key log is a directory of *.log key logs.
	KeyLogDir bool
	// KeyLogPending are the bytes of a last line without its newline,
	// not read (it may be still being written).
	KeyLogPending int
	// Captured are the counts of the lines of the captures' own pcapng
	// Decryption Secrets Blocks.
	Captured tlskeys.Stats
	// Sessions are the sessions with secrets, from all sources.
	Sessions int
	// Conflicts count secrets that differ from one read before for the
	// same session and label (the first read is kept: the captures'
	// blocks are read before the key log); FirstConflict says where the
	// first one and the kept secret came from.
	Conflicts     int
	FirstConflict string
	// Late counts the secrets lines of blocks that came after packets in
	// a capture read as a stream (not seekable: its blocks could not be
	// read first), which the connections before them could not use.
	Late int
	// SecretsErrors are the captures whose secrets blocks could not all be
	// read first (over the limit).
	SecretsErrors []error
	// Problems are the first connections whose decryption stopped, with
	// why.
	Problems []wire.TLSProblem
}

// maxCaptureSecrets bounds the TLS secrets read from the captures'
// Decryption Secrets Blocks, all files together: the packet reader's
// budget for them, so both ways of reading a file's blocks agree.
const maxCaptureSecrets = capture.MaxSecretsBytes

// captureKeys are the secrets a capture is decrypted with: the sessions
// the capture files carry in Decryption Secrets Blocks, read first, and a
// key log (which may still be growing: tlskeys.File), in one set so that
// a secret of one that contradicts the other is counted.
type captureKeys struct {
	keys *tlskeys.Keys
	file *tlskeys.File // nil: no key log
	// fileFrom names the key log in messages.
	fileFrom string
	// captured counts the lines of the captures' blocks.
	captured tlskeys.Stats
	budget   int64 // secrets bytes still allowed from the captures
	// mayEmbed: a capture is a pcapng stream, whose secrets blocks are
	// read as they come and may come after the connections they are for.
	mayEmbed bool
	late     int
	errs     []error
}

func newCaptureKeys() *captureKeys {
	return &captureKeys{keys: tlskeys.New(), budget: maxCaptureSecrets}
}

// openKeyLog opens the key log at path ("" for none), or the key logs in
// the directory path, into k: after the captures' secrets blocks, which
// win a conflict. fromBroker says the broker's key-log agent writes it.
func (k *captureKeys) openKeyLog(path string, fromBroker bool) error {
	if path == "" {
		return nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("--tls-keylog: %w", err)
	}
	if st.IsDir() {
		// Several JVMs' key logs (keylogagent.HostDir).
		k.file, err = tlskeys.OpenDirInto(path, k.keys)
	} else {
		k.file, err = tlskeys.OpenInto(path, k.keys)
	}
	if err != nil {
		return fmt.Errorf("--tls-keylog: %w", err)
	}
	k.fileFrom = keyLogFrom(path, st.IsDir(), fromBroker)
	return nil
}

// keyLogFrom names a key log in messages (escaped where printed, as the
// rest of the footer and the warnings).
func keyLogFrom(path string, dir, fromBroker bool) string {
	switch {
	case fromBroker && dir:
		return "the broker's key logs in " + path + " (--tls-keys attach)"
	case fromBroker:
		return "the broker's key log " + path + " (--tls-keys attach)"
	case dir:
		return "the key logs in " + path
	}
	return "key log " + path
}

// readCaptureSecrets reads the secrets blocks of a regular pcapng file
// before its packets, so that a block after the packets it is for is
// used. A damaged file's blocks are read up to the damage, which the
// packet reader reports; the blocks over the limit are reported.
func (k *captureKeys) readCaptureSecrets(path string) {
	blocks, err := capture.ReadSecrets(path, k.budget)
	for _, b := range blocks {
		k.budget -= int64(len(b.KeyLog))
		k.addCaptured(b.KeyLog, fmt.Sprintf("%s secrets block at byte %d", path, b.Offset))
	}
	if errors.Is(err, capture.ErrSecretsLimit) {
		k.errs = append(k.errs, fmt.Errorf("%w: its later secrets blocks were not read (%d bytes of secrets at most)", err, maxCaptureSecrets))
	}
}

// addCaptured adds the key log lines of a capture's secrets block.
func (k *captureKeys) addCaptured(keyLog []byte, name string) tlskeys.Stats {
	st, _ := k.keys.Load(strings.NewReader(string(keyLog)), name) // a string has no read error
	k.captured = addStats(k.captured, st)
	return st
}

// addStats sums two sources' line counts (the first positions kept).
func addStats(a, b tlskeys.Stats) tlskeys.Stats {
	a.Lines += b.Lines
	a.Secrets += b.Secrets
	a.Sessions += b.Sessions
	a.Blank += b.Blank
	a.Duplicates += b.Duplicates
	a.UnknownLabels += b.UnknownLabels
	a.Malformed += b.Malformed
	a.Conflicts += b.Conflicts
	if a.FirstMalformed == "" {
		a.FirstMalformed = b.FirstMalformed
	}
	if a.FirstConflict == "" {
		a.FirstConflict = b.FirstConflict
	}
	return a
}

// addStreamed adds the secrets of blocks read with a stream's packets;
// late says packets came before them.
func (k *captureKeys) addStreamed(keyLog []byte, name string, late bool) {
	if int64(len(keyLog)) > k.budget {
		if k.budget >= 0 {
			k.errs = append(k.errs, fmt.Errorf("%s: %w: its later secrets blocks were not read (%d bytes of secrets at most)", name, capture.ErrSecretsLimit, maxCaptureSecrets))
		}
		k.budget = -1
		return
	}
	k.budget -= int64(len(keyLog))
	st := k.addCaptured(keyLog, name+" secrets block")
	if late {
		k.late += st.Usable()
	}
}

// Lookup finds a session in the captures' secrets and the key log,
// reading what the key log added when it is not there.
func (k *captureKeys) Lookup(cr tlskeys.ClientRandom) (tlskeys.Session, bool) {
	if k.file != nil {
		return k.file.Lookup(cr)
	}
	return k.keys.Lookup(cr)
}

// LookupSessionID finds a TLS 1.2 master secret by session id.
func (k *captureKeys) LookupSessionID(id []byte) (tlskeys.Secret, bool) {
	if k.file != nil {
		return k.file.LookupSessionID(id)
	}
	return k.keys.LookupSessionID(id)
}

// Refresh reads what the key log added since.
func (k *captureKeys) Refresh() {
	if k.file != nil {
		k.file.Refresh()
	}
}

// Empty says no secret can come: no key log, no secret from the captures,
// and no capture whose blocks are read as they come (a pcapng stream).
func (k *captureKeys) Empty() bool {
	return k.file == nil && k.keys.Len() == 0 && !k.mayEmbed
}

// Describe names where the secrets are looked for, for the reasons of
// connections without them.
func (k *captureKeys) Describe() string {
	captured := k.captured.Lines > 0 || k.mayEmbed
	switch {
	case k.file != nil && captured:
		return k.fileFrom + " or the capture's secrets blocks"
	case k.file != nil:
		return k.fileFrom
	case captured:
		return "the capture's secrets blocks"
	}
	return ""
}

// result fills what the footer says about TLS.
func (k *captureKeys) result(dec *wire.Decoder) TLSResult {
	all := k.keys.Stats()
	r := TLSResult{Captured: k.captured, Sessions: all.Sessions, Conflicts: all.Conflicts, FirstConflict: all.FirstConflict,
		Late: k.late, SecretsErrors: k.errs, Problems: dec.TLSProblems()}
	if k.file != nil {
		r.KeyLog, r.KeyLogFrom, r.KeyLogLines, r.KeyLogPending = k.file.Path(), k.fileFrom, k.file.Stats(), k.file.Pending()
		r.KeyLogDir = k.file.Dir()
	}
	return r
}

// formatTLS is the footer's lines about TLS connections and their
// secrets, "" when there were none.
func formatTLS(w wire.Stats, t TLSResult) string {
	if w.TLSConnections == 0 {
		return ""
	}
	b := w.TLSBuckets()
	s := fmt.Sprintf("%d TLS connections: %d decrypted, %d decrypted then stopped, %d handshake only, %d not decrypted (%d without secrets, %d secrets did not decrypt or suite not decrypted, %d not TLS, %d handshake lost in a gap)",
		w.TLSConnections, b.Decrypted, b.DecryptedThenStop, b.HandshakeOnly, w.TLSUndecrypted(), b.NoKeys, b.Failed, b.NotTLS, b.Lost)
	if b.InProgress > 0 {
		s += fmt.Sprintf(", %d in their handshake or waiting for secrets", b.InProgress)
	}
	s += fmt.Sprintf("; %s not decrypted", humanBytes(w.TLSUndecryptedBytes))
	if w.TLSResyncs > 0 {
		s += fmt.Sprintf("; decryption went on after %d gaps", w.TLSResyncs)
	}
	return s + "\n" + formatSecrets(t)
}

// formatSecrets is the footer's line about the secrets decryption had.
func formatSecrets(t TLSResult) string {
	var sources []string
	if t.KeyLog != "" {
		sources = append(sources, t.KeyLogFrom+": "+formatLines(t.KeyLogLines))
	}
	if t.Captured.Lines > 0 {
		sources = append(sources, "the capture's secrets blocks: "+formatLines(t.Captured))
	}
	if len(sources) == 0 {
		return "TLS secrets: none (no --tls-keylog given and no secrets blocks in the capture)"
	}
	s := fmt.Sprintf("TLS secrets of %d sessions: %s", t.Sessions, strings.Join(sources, "; "))
	if t.Conflicts > 0 {
		s += fmt.Sprintf("; %d conflicting secrets, the first read kept (%s)", t.Conflicts, t.FirstConflict)
	}
	return s
}

// formatLines says what a source's lines gave.
func formatLines(st tlskeys.Stats) string {
	s := fmt.Sprintf("%d secrets", st.Secrets)
	if st.Duplicates > 0 {
		s += fmt.Sprintf(", %d repeated", st.Duplicates)
	}
	if st.Conflicts > 0 {
		s += fmt.Sprintf(", %d conflicting with one read before", st.Conflicts)
	}
	if n := st.Skipped(); n > 0 {
		s += fmt.Sprintf(", %d lines skipped (%d malformed, first at %s; %d unknown labels)", n, st.Malformed, orNone(st.FirstMalformed), st.UnknownLabels)
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// TLSWarnings are one line per connection whose decryption stopped, and
// per problem with the secrets, for stderr. They name files the user gave
// and come from the wire: escape them when printing (output.Escape).
func (r Result) TLSWarnings() []string {
	out := r.TLS.secretsWarnings(r.Wire)
	for _, p := range r.TLS.Problems {
		what := "not decrypted"
		if p.Decrypted {
			what = "decrypted until it stopped"
		}
		out = append(out, fmt.Sprintf("TLS connection %s -> %s %s (%s): %s", p.Client, p.Broker, what, p.Status, p.Reason))
	}
	if n := r.Wire.TLSStopped() - int64(len(r.TLS.Problems)); n > 0 {
		out = append(out, fmt.Sprintf("and %d more TLS connections whose decryption stopped", n))
	}
	return out
}

// secretsWarnings say what was wrong with the secrets: a key log with no
// key log line, conflicting secrets, secrets that came too late or were
// too many.
func (t TLSResult) secretsWarnings(w wire.Stats) []string {
	var out []string
	it, has := "it", "has"
	if t.KeyLogDir {
		it, has = "its *.log files", "have"
	}
	if t.KeyLog != "" && t.KeyLogLines.Usable() == 0 {
		if n := t.KeyLogLines.Skipped(); n > 0 {
			out = append(out, fmt.Sprintf("--tls-keylog %s: no line of %s is a key log line (%d lines skipped, the first at %s)", t.KeyLog, it, n, firstSkipped(t.KeyLogLines)))
		} else {
			out = append(out, fmt.Sprintf("--tls-keylog %s: %s %s no key log lines", t.KeyLog, it, has))
		}
	}
	if t.KeyLogPending > 0 {
		out = append(out, fmt.Sprintf("--tls-keylog %s: the last line of %s has no newline: %d bytes not read (a line still being written?)", t.KeyLog, it, t.KeyLogPending))
	}
	if t.Conflicts > 0 {
		out = append(out, fmt.Sprintf("%d TLS secrets conflict with one read before for the same session and label; the first read is kept: %s", t.Conflicts, t.FirstConflict))
	}
	if t.Late > 0 && w.TLSNoKeys+w.TLSDecryptedThenStopped > 0 {
		out = append(out, fmt.Sprintf("%d TLS secrets came in secrets blocks after packets of a capture read as a stream: connections before them could not use them (give the capture as a regular file)", t.Late))
	}
	for _, err := range t.SecretsErrors {
		out = append(out, err.Error())
	}
	return out
}

// firstSkipped is where the first skipped line is (an unknown label has
// no position kept: it is a line the format may grow).
func firstSkipped(st tlskeys.Stats) string {
	if st.FirstMalformed != "" {
		return st.FirstMalformed
	}
	return "a line with an unknown label"
}

// readSecretsFirst reads the secrets blocks of a regular pcapng capture
// before its packets, and says whether the file is a stream instead,
// whose blocks are read as they come.
func (k *captureKeys) readSecretsFirst(f *capture.File) (streamed bool) {
	if f.Format != capture.FormatPcapNG {
		return false
	}
	if st, err := os.Stat(f.Path); err != nil || !st.Mode().IsRegular() {
		k.mayEmbed = true
		return true
	}
	k.readCaptureSecrets(f.Path)
	return false
}
