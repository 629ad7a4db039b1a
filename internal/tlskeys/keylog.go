// Package tlskeys reads TLS session secrets in the NSS key log format
// (SSLKEYLOGFILE: what Wireshark, curl, browsers, Go's tls.Config
// KeyLogWriter and the extract-tls-secrets Java agent write), for the TLS
// layer that decrypts a captured Kafka conversation.
//
// Each line is "LABEL CLIENT_RANDOM SECRET", hex-encoded, with "#" comment
// lines. TLS 1.2 sessions have one CLIENT_RANDOM line (the 48-byte master
// secret); TLS 1.3 sessions have a line per traffic secret
// (CLIENT_HANDSHAKE_TRAFFIC_SECRET, SERVER_HANDSHAKE_TRAFFIC_SECRET,
// CLIENT_TRAFFIC_SECRET_0, SERVER_TRAFFIC_SECRET_0, and
// EXPORTER_SECRET, EARLY_EXPORTER_SECRET and CLIENT_EARLY_TRAFFIC_SECRET,
// which are kept but not needed to read application data).
//
// A key log is untrusted input: lines longer than MaxLineBytes, unknown
// labels, bad hex and wrong lengths are counted and skipped with the line
// number of the first of each kind, never fatal. A second, different
// secret for a session's label is counted as a conflict, with where it and
// the secret kept (the one read first) came from. Secrets are never
// printed: Secret's String and GoString say only how long it is.
//
// A key log file is a regular file, followed as it grows (File, Tail), or
// a pipe or FIFO read once with bounds on its size and idle time; a
// device, a socket or a directory given as a file is refused.
package tlskeys

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// Labels of the NSS key log format.
const (
	LabelClientRandom             = "CLIENT_RANDOM" // TLS 1.2 and earlier: the master secret
	LabelClientEarlyTraffic       = "CLIENT_EARLY_TRAFFIC_SECRET"
	LabelClientHandshakeTraffic   = "CLIENT_HANDSHAKE_TRAFFIC_SECRET"
	LabelServerHandshakeTraffic   = "SERVER_HANDSHAKE_TRAFFIC_SECRET"
	LabelClientApplicationTraffic = "CLIENT_TRAFFIC_SECRET_0"
	LabelServerApplicationTraffic = "SERVER_TRAFFIC_SECRET_0"
	LabelExporter                 = "EXPORTER_SECRET"
	LabelEarlyExporter            = "EARLY_EXPORTER_SECRET"
)

// labels maps each known label to its slot in Session.
var labels = map[string]int{
	LabelClientRandom:             slotMaster,
	LabelClientEarlyTraffic:       slotClientEarly,
	LabelClientHandshakeTraffic:   slotClientHandshake,
	LabelServerHandshakeTraffic:   slotServerHandshake,
	LabelClientApplicationTraffic: slotClientTraffic,
	LabelServerApplicationTraffic: slotServerTraffic,
	LabelExporter:                 slotExporter,
	LabelEarlyExporter:            slotEarlyExporter,
}

const (
	slotMaster = iota
	slotClientEarly
	slotClientHandshake
	slotServerHandshake
	slotClientTraffic
	slotServerTraffic
	slotExporter
	slotEarlyExporter
	slots
)

// MaxLineBytes bounds a key log line: the longest real one (a 48-byte
// secret of TLS 1.3 with SHA-384, hex) is under 200 bytes.
const MaxLineBytes = 1024

// Secret is key material. It never prints its bytes.
type Secret []byte

// String says only the secret's length.
func (s Secret) String() string { return fmt.Sprintf("[secret, %d bytes]", len(s)) }

// GoString is String, so that %#v does not print the bytes either.
func (s Secret) GoString() string { return s.String() }

// ClientRandom is the ClientHello's random: it names a session.
type ClientRandom [32]byte

// Session is the secrets one TLS session logged.
type Session struct {
	// Master is the TLS 1.2 master secret (48 bytes).
	Master Secret
	// The TLS 1.3 traffic secrets (32 or 48 bytes: the hash's size).
	ClientEarly, ClientHandshake, ServerHandshake Secret
	ClientTraffic, ServerTraffic                  Secret
	Exporter, EarlyExporter                       Secret
}

func (s *Session) slot(i int) *Secret {
	switch i {
	case slotMaster:
		return &s.Master
	case slotClientEarly:
		return &s.ClientEarly
	case slotClientHandshake:
		return &s.ClientHandshake
	case slotServerHandshake:
		return &s.ServerHandshake
	case slotClientTraffic:
		return &s.ClientTraffic
	case slotServerTraffic:
		return &s.ServerTraffic
	case slotExporter:
		return &s.Exporter
	default:
		return &s.EarlyExporter
	}
}

// slotLabels names each slot, for messages.
var slotLabels = [slots]string{
	slotMaster:          LabelClientRandom,
	slotClientEarly:     LabelClientEarlyTraffic,
	slotClientHandshake: LabelClientHandshakeTraffic,
	slotServerHandshake: LabelServerHandshakeTraffic,
	slotClientTraffic:   LabelClientApplicationTraffic,
	slotServerTraffic:   LabelServerApplicationTraffic,
	slotExporter:        LabelExporter,
	slotEarlyExporter:   LabelEarlyExporter,
}

// Stats count what reading key logs kept and skipped. Every line read is
// in exactly one of Blank, Secrets, Duplicates, Conflicts, UnknownLabels
// and Malformed. First* give the file and line of the first line of their
// kind.
type Stats struct {
	Lines int
	// Secrets: lines whose secret was new, and kept.
	Secrets int
	// Sessions: sessions with at least one secret (for the counts of one
	// Load: the sessions its lines were the first to name).
	Sessions int
	// Blank: empty lines and "#" comments.
	Blank int
	// Duplicates: lines repeating a secret already known (the same
	// session, label and value): a key log read twice, or the same
	// secrets in a key log and a capture's secrets blocks.
	Duplicates int
	// UnknownLabels: well-formed lines with a label this package does not
	// know (kept out, not an error: the format grows).
	UnknownLabels int
	// Malformed: lines that are not LABEL HEX HEX, or whose random is not
	// 32 bytes or whose secret is not 32 or 48 bytes (the master secret:
	// exactly 48), or longer than MaxLineBytes.
	Malformed      int
	FirstMalformed string
	// Conflicts: lines with a second, different secret for a session's
	// label. The secret read first is kept; FirstConflict says where the
	// first conflicting line is and where the kept secret came from.
	Conflicts     int
	FirstConflict string
}

// Skipped counts the lines that are neither blank nor a usable secret:
// malformed lines and unknown labels.
func (s Stats) Skipped() int { return s.Malformed + s.UnknownLabels }

// Usable counts the lines that are key log lines this package reads:
// secrets kept, repeated, or conflicting with one kept.
func (s Stats) Usable() int { return s.Secrets + s.Duplicates + s.Conflicts }

// add counts one line's outcome.
func (s *Stats) add(r lineResult, name string, line int) {
	s.Lines++
	switch r.outcome {
	case lineBlank:
		s.Blank++
	case lineSecret:
		s.Secrets++
	case lineDuplicate:
		s.Duplicates++
	case lineUnknown:
		s.UnknownLabels++
	case lineMalformed:
		s.Malformed++
		if s.FirstMalformed == "" {
			s.FirstMalformed = fmt.Sprintf("%s:%d", name, line)
		}
	case lineConflict:
		s.Conflicts++
		if s.FirstConflict == "" {
			s.FirstConflict = r.conflict
		}
	}
	if r.newSession {
		s.Sessions++
	}
}

// lineOutcome is what became of one key log line.
type lineOutcome int

const (
	lineBlank lineOutcome = iota
	lineSecret
	lineDuplicate
	lineConflict
	lineUnknown
	lineMalformed
)

// lineResult is a line's outcome, whether it named a session first, and
// for a conflict, the words that say where the two secrets came from.
type lineResult struct {
	outcome    lineOutcome
	newSession bool
	conflict   string
}

// position is where a secret was read: an index in Keys.names and a line.
// Kept per secret (not as a string) so that a conflict can say which
// source won at the cost of 8 bytes a secret.
type position struct {
	name, line uint32
}

// entry is a session's secrets and where each was read.
type entry struct {
	Session
	from [slots]position
}

// sessionIDEntry is a TLS 1.2 master secret by session id, and where it
// was read.
type sessionIDEntry struct {
	master Secret
	from   position
}

// Keys are the sessions of one or more key logs, by client random. Safe
// for concurrent use: a live capture reads it while a key log is still
// being appended to.
type Keys struct {
	mu       sync.RWMutex
	sessions map[ClientRandom]*entry
	// bySessionID are TLS 1.2 master secrets of the older form
	// "RSA Session-ID:HEX Master-Key:HEX" (what the extract-tls-secrets
	// agent writes for TLS 1.2), by session id.
	bySessionID map[string]sessionIDEntry
	// names are the sources lines were read from, for positions.
	names   []string
	nameIdx map[string]uint32
	stats   Stats
}

// New returns an empty set of keys.
func New() *Keys {
	return &Keys{sessions: make(map[ClientRandom]*entry), bySessionID: make(map[string]sessionIDEntry), nameIdx: make(map[string]uint32)}
}

// LookupSessionID returns the TLS 1.2 master secret logged for a session
// id ("RSA Session-ID:... Master-Key:..." lines).
func (k *Keys) LookupSessionID(id []byte) (Secret, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	e, ok := k.bySessionID[string(id)]
	return e.master, ok
}

// Lookup returns a copy of the secrets logged for the session with the
// given client random.
func (k *Keys) Lookup(cr ClientRandom) (Session, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	e, ok := k.sessions[cr]
	if !ok {
		return Session{}, false
	}
	return e.Session, true
}

// Len is the number of sessions with at least one secret.
func (k *Keys) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.sessions) + len(k.bySessionID)
}

// Stats returns the counters so far, of every line added.
func (k *Keys) Stats() Stats {
	k.mu.RLock()
	defer k.mu.RUnlock()
	st := k.stats
	st.Sessions = len(k.sessions) + len(k.bySessionID)
	return st
}

// ReadFile adds the key log at path: a regular file, or a pipe or FIFO
// read to its end (at most MaxStreamBytes, each read bounded by
// safefile.DefaultIdle); anything else is refused.
func (k *Keys) ReadFile(path string) error {
	in, err := safefile.Open(path, safefile.Stream)
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	defer in.Close()
	_, err = k.loadLimited(in, path)
	return err
}

// Read adds a key log read from r; name says where it came from in the
// counters' positions. Only a read error is returned: bad lines are
// counted (Stats).
func (k *Keys) Read(r io.Reader, name string) error {
	_, err := k.Load(r, name)
	return err
}

// Load is Read, and also returns the counts of r's own lines: what this
// source added to the keys, repeated, or contradicted.
func (k *Keys) Load(r io.Reader, name string) (Stats, error) {
	var own Stats
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			line++
			if errors.Is(err, bufio.ErrBufferFull) || len(b) > MaxLineBytes {
				own.add(k.overlong(name, line), name, line)
				// The rest of the overlong line, up to its end.
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
			} else {
				own.add(k.add(b, name, line), name, line)
			}
		}
		if err == io.EOF {
			return own, nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return own, fmt.Errorf("tls key log %s (line %d): %w", name, line, err)
		}
	}
}

// MaxStreamBytes bounds a key log read from a pipe or FIFO, read once
// into memory-held sessions: about 80 000 TLS 1.3 sessions. A regular
// file is followed as it grows instead, line by line.
const MaxStreamBytes = 64 << 20

// loadLimited loads at most MaxStreamBytes of r: an endless stream
// (/dev/zero behind a pipe) is an error, not a spinning core.
func (k *Keys) loadLimited(r io.Reader, name string) (Stats, error) {
	lr := &io.LimitedReader{R: r, N: MaxStreamBytes + 1}
	st, err := k.Load(lr, name)
	if err == nil && lr.N == 0 {
		err = fmt.Errorf("tls key log %s: %w of %d bytes", name, safefile.ErrTooLarge, MaxStreamBytes)
	}
	return st, err
}

// Add adds one key log line (name and line number for the counters).
func (k *Keys) Add(b []byte, name string, line int) { k.add(b, name, line) }

func (k *Keys) add(b []byte, name string, line int) lineResult {
	b = bytes.TrimSpace(b)
	k.mu.Lock()
	defer k.mu.Unlock()
	r := k.parseLocked(b, name, line)
	k.stats.add(r, name, line)
	return r
}

// overlong counts a line longer than MaxLineBytes as malformed.
func (k *Keys) overlong(name string, line int) lineResult {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := lineResult{outcome: lineMalformed}
	k.stats.add(r, name, line)
	return r
}

// parseLocked reads one trimmed line into the keys.
func (k *Keys) parseLocked(b []byte, name string, line int) lineResult {
	if len(b) == 0 || b[0] == '#' {
		return lineResult{outcome: lineBlank}
	}
	fields := bytes.Fields(b)
	if len(fields) != 3 {
		return lineResult{outcome: lineMalformed}
	}
	if string(fields[0]) == "RSA" {
		return k.addSessionIDLocked(fields[1], fields[2], k.positionLocked(name, line))
	}
	slot, known := labels[string(fields[0])]
	var cr ClientRandom
	if hex.DecodedLen(len(fields[1])) != len(cr) {
		return lineResult{outcome: lineMalformed}
	}
	if _, err := hex.Decode(cr[:], fields[1]); err != nil {
		return lineResult{outcome: lineMalformed}
	}
	n := hex.DecodedLen(len(fields[2]))
	if n != 32 && n != 48 || known && slot == slotMaster && n != 48 {
		return lineResult{outcome: lineMalformed}
	}
	secret := make(Secret, n)
	if _, err := hex.Decode(secret, fields[2]); err != nil {
		return lineResult{outcome: lineMalformed}
	}
	if !known {
		return lineResult{outcome: lineUnknown}
	}
	return k.keepLocked(cr, slot, secret, k.positionLocked(name, line))
}

// keepLocked keeps a session's secret unless one is already known for
// its label: the same one is a duplicate, another a conflict.
func (k *Keys) keepLocked(cr ClientRandom, slot int, secret Secret, at position) lineResult {
	e := k.sessions[cr]
	r := lineResult{outcome: lineSecret}
	if e == nil {
		e = new(entry)
		k.sessions[cr] = e
		r.newSession = true
	}
	dst := e.slot(slot)
	switch {
	case *dst == nil:
		*dst, e.from[slot] = secret, at
	case bytes.Equal(*dst, secret):
		r.outcome = lineDuplicate
	default:
		r.outcome, r.conflict = lineConflict, k.conflictLocked(slotLabels[slot], at, e.from[slot])
	}
	return r
}

// conflictLocked says where a conflicting secret and the kept one came
// from.
func (k *Keys) conflictLocked(label string, at, kept position) string {
	return fmt.Sprintf("%s at %s differs from the one at %s, which was kept", label, k.whereLocked(at), k.whereLocked(kept))
}

// positionLocked is the position of a line of the source name.
func (k *Keys) positionLocked(name string, line int) position {
	i, ok := k.nameIdx[name]
	if !ok {
		i = uint32(len(k.names))
		k.names = append(k.names, name)
		k.nameIdx[name] = i
	}
	return position{name: i, line: uint32(min(line, math.MaxUint32))}
}

// whereLocked is "name:line".
func (k *Keys) whereLocked(p position) string {
	return fmt.Sprintf("%s:%d", k.names[p.name], p.line)
}

// addSessionIDLocked adds an "RSA Session-ID:HEX Master-Key:HEX" line:
// a TLS 1.2 master secret (48 bytes) by session id (1 to 32 bytes).
func (k *Keys) addSessionIDLocked(id, master []byte, at position) lineResult {
	idHex, ok1 := bytes.CutPrefix(id, []byte("Session-ID:"))
	mHex, ok2 := bytes.CutPrefix(master, []byte("Master-Key:"))
	n := hex.DecodedLen(len(idHex))
	if !ok1 || !ok2 || n < 1 || n > 32 || hex.DecodedLen(len(mHex)) != 48 {
		return lineResult{outcome: lineMalformed}
	}
	sid := make([]byte, n)
	secret := make(Secret, 48)
	if _, err := hex.Decode(sid, idHex); err != nil {
		return lineResult{outcome: lineMalformed}
	}
	if _, err := hex.Decode(secret, mHex); err != nil {
		return lineResult{outcome: lineMalformed}
	}
	switch old, ok := k.bySessionID[string(sid)]; {
	case !ok:
		k.bySessionID[string(sid)] = sessionIDEntry{master: secret, from: at}
		return lineResult{outcome: lineSecret, newSession: true}
	case bytes.Equal(old.master, secret):
		return lineResult{outcome: lineDuplicate}
	default:
		return lineResult{outcome: lineConflict, conflict: k.conflictLocked("RSA Session-ID", at, old.from)}
	}
}
