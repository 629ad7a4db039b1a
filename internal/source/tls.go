package source

import (
	"fmt"
	"os"

	"github.com/kscope-dev/kscope/internal/tlskeys"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TLSResult says what decrypting TLS listeners' connections had to go
// on, and which connections it could not decrypt.
type TLSResult struct {
	KeyLog   string // the key log file given ("" for none)
	Sessions int    // sessions with secrets in it
	// Embedded are the sessions of the captures' own pcapng Decryption
	// Secrets Blocks.
	Embedded int
	// Malformed counts key log lines that could not be used.
	Malformed int
	// Problems are the first connections not decrypted, with why.
	Problems []wire.TLSProblem
}

// captureKeys are the secrets a capture is decrypted with: a key log file
// (which may still be growing: tlskeys.File) and the sessions the capture
// files carry in Decryption Secrets Blocks.
type captureKeys struct {
	file     *tlskeys.File
	embedded *tlskeys.Keys
	// mayEmbed: the captures are pcapng, whose Decryption Secrets Blocks
	// may come after the connections they are for.
	mayEmbed bool
}

// openKeys opens the key log at path ("" for none), or the key logs in
// the directory path.
func openKeys(path string) (*captureKeys, error) {
	k := &captureKeys{embedded: tlskeys.New()}
	if path != "" {
		open := tlskeys.OpenFile
		if st, err := os.Stat(path); err == nil && st.IsDir() {
			open = tlskeys.OpenDir // several JVMs' key logs
		}
		f, err := open(path)
		if err != nil {
			return nil, fmt.Errorf("--tls-keylog: %w", err)
		}
		k.file = f
	}
	return k, nil
}

// Lookup finds a session in the capture's own secrets, then in the key
// log.
func (k *captureKeys) Lookup(cr tlskeys.ClientRandom) (tlskeys.Session, bool) {
	if s, ok := k.embedded.Lookup(cr); ok {
		return s, true
	}
	if k.file != nil {
		return k.file.Lookup(cr)
	}
	return tlskeys.Session{}, false
}

// LookupSessionID finds a TLS 1.2 master secret by session id.
func (k *captureKeys) LookupSessionID(id []byte) (tlskeys.Secret, bool) {
	if m, ok := k.embedded.LookupSessionID(id); ok {
		return m, true
	}
	if k.file != nil {
		return k.file.LookupSessionID(id)
	}
	return nil, false
}

// Refresh reads what the key log added since.
func (k *captureKeys) Refresh() {
	if k.file != nil {
		k.file.Refresh()
	}
}

// Empty says no secret can come: no key log, no secret from the captures
// so far, and captures that cannot carry any (pcap, or a live capture;
// pcapng secrets blocks may come after the connections they are for).
func (k *captureKeys) Empty() bool {
	return k.file == nil && k.embedded.Len() == 0 && !k.mayEmbed
}

// result fills what the footer says about TLS.
func (k *captureKeys) result(dec *wire.Decoder) TLSResult {
	r := TLSResult{Embedded: k.embedded.Len(), Problems: dec.TLSProblems()}
	r.Malformed = k.embedded.Stats().Malformed
	if k.file != nil {
		st := k.file.Keys().Stats()
		r.KeyLog, r.Sessions, r.Malformed = k.file.Path(), st.Sessions, r.Malformed+st.Malformed
	}
	return r
}

// formatTLS is the footer's line about TLS connections, "" when there
// were none.
func formatTLS(w wire.Stats, t TLSResult) string {
	if w.TLSConnections == 0 {
		return ""
	}
	s := fmt.Sprintf("%d TLS connections: %d decrypted, %d handshake only, %d not decrypted (%d without keys, %d wrong key or suite, %d lost after a gap; %s)",
		w.TLSConnections, w.TLSDecrypted, w.TLSHandshakeOnly, w.TLSUndecrypted(), w.TLSNoKeys, w.TLSFailed, w.TLSLost, humanBytes(w.TLSUndecryptedBytes))
	if w.TLSResyncs > 0 {
		s += fmt.Sprintf("; decryption went on after %d gaps", w.TLSResyncs)
	}
	switch {
	case t.KeyLog == "" && t.Embedded == 0:
		s += "; no --tls-keylog given and no secrets in the capture"
	case t.KeyLog != "":
		s += fmt.Sprintf("; key log %s: %d sessions", t.KeyLog, t.Sessions)
	}
	if t.Embedded > 0 {
		s += fmt.Sprintf("; %d sessions in the capture's secrets blocks", t.Embedded)
	}
	if t.Malformed > 0 {
		s += fmt.Sprintf("; %d key log lines malformed", t.Malformed)
	}
	return s
}

// TLSWarnings are one line per connection not decrypted, for stderr.
func (r Result) TLSWarnings() []string {
	var out []string
	for _, p := range r.TLS.Problems {
		out = append(out, fmt.Sprintf("TLS connection %s -> %s not decrypted (%s): %s", p.Client, p.Broker, p.Status, p.Reason))
	}
	if n := r.Wire.TLSUndecrypted() - int64(len(r.TLS.Problems)); n > 0 {
		out = append(out, fmt.Sprintf("and %d more TLS connections not decrypted", n))
	}
	return out
}
