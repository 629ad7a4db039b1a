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
// number of the first of each kind, never fatal. Secrets are never
// printed: Secret's String and GoString say only how long it is.
package tlskeys

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
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

// Stats count what reading key logs kept and skipped. First* give the
// file and line of the first skipped line of each kind.
type Stats struct {
	Lines, Secrets, Sessions int
	// UnknownLabels: well-formed lines with a label this package does not
	// know (kept out, not an error: the format grows).
	UnknownLabels int
	// Malformed: lines that are not LABEL HEX HEX, or whose random is not
	// 32 bytes or whose secret is not 32 or 48 bytes (the master secret:
	// exactly 48), or longer than MaxLineBytes.
	Malformed      int
	FirstMalformed string
	// Conflicts: a second, different secret for a session's label (the
	// first is kept).
	Conflicts int
}

// Keys are the sessions of one or more key logs, by client random. Safe
// for concurrent use: a live capture reads it while a key log is still
// being appended to.
type Keys struct {
	mu       sync.RWMutex
	sessions map[ClientRandom]*Session
	// bySessionID are TLS 1.2 master secrets of the older form
	// "RSA Session-ID:HEX Master-Key:HEX" (what the extract-tls-secrets
	// agent writes for TLS 1.2), by session id.
	bySessionID map[string]Secret
	stats       Stats
}

// New returns an empty set of keys.
func New() *Keys {
	return &Keys{sessions: make(map[ClientRandom]*Session), bySessionID: make(map[string]Secret)}
}

// LookupSessionID returns the TLS 1.2 master secret logged for a session
// id ("RSA Session-ID:... Master-Key:..." lines).
func (k *Keys) LookupSessionID(id []byte) (Secret, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	m, ok := k.bySessionID[string(id)]
	return m, ok
}

// Lookup returns a copy of the secrets logged for the session with the
// given client random.
func (k *Keys) Lookup(cr ClientRandom) (Session, bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	s, ok := k.sessions[cr]
	if !ok {
		return Session{}, false
	}
	return *s, true
}

// Len is the number of sessions with at least one secret.
func (k *Keys) Len() int {
	k.mu.RLock()
	defer k.mu.RUnlock()
	return len(k.sessions) + len(k.bySessionID)
}

// Stats returns the counters so far.
func (k *Keys) Stats() Stats {
	k.mu.RLock()
	defer k.mu.RUnlock()
	st := k.stats
	st.Sessions = len(k.sessions) + len(k.bySessionID)
	return st
}

// ReadFile adds the key log at path.
func (k *Keys) ReadFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("tls key log: %w", err)
	}
	defer f.Close()
	return k.Read(f, path)
}

// Read adds a key log read from r; name says where it came from in the
// counters' positions. Only a read error is returned: bad lines are
// counted (Stats).
func (k *Keys) Read(r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	line := 0
	for {
		b, err := br.ReadSlice('\n')
		if len(b) > 0 {
			line++
			if errors.Is(err, bufio.ErrBufferFull) || len(b) > MaxLineBytes {
				k.malformed(name, line)
				// The rest of the overlong line, up to its end.
				for errors.Is(err, bufio.ErrBufferFull) {
					_, err = br.ReadSlice('\n')
				}
			} else {
				k.Add(b, name, line)
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return fmt.Errorf("tls key log %s (line %d): %w", name, line, err)
		}
	}
}

// Add adds one key log line (name and line number for the counters).
func (k *Keys) Add(b []byte, name string, line int) {
	b = bytes.TrimSpace(b)
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stats.Lines++
	if len(b) == 0 || b[0] == '#' {
		return
	}
	fields := bytes.Fields(b)
	if len(fields) != 3 {
		k.malformedLocked(name, line)
		return
	}
	if string(fields[0]) == "RSA" {
		k.addSessionIDLocked(fields[1], fields[2], name, line)
		return
	}
	slot, known := labels[string(fields[0])]
	var cr ClientRandom
	if hex.DecodedLen(len(fields[1])) != len(cr) {
		k.malformedLocked(name, line)
		return
	}
	if _, err := hex.Decode(cr[:], fields[1]); err != nil {
		k.malformedLocked(name, line)
		return
	}
	n := hex.DecodedLen(len(fields[2]))
	if n != 32 && n != 48 || known && slot == slotMaster && n != 48 {
		k.malformedLocked(name, line)
		return
	}
	secret := make(Secret, n)
	if _, err := hex.Decode(secret, fields[2]); err != nil {
		k.malformedLocked(name, line)
		return
	}
	if !known {
		k.stats.UnknownLabels++
		return
	}
	s := k.sessions[cr]
	if s == nil {
		s = new(Session)
		k.sessions[cr] = s
	}
	dst := s.slot(slot)
	switch {
	case *dst == nil:
		*dst = secret
		k.stats.Secrets++
	case !bytes.Equal(*dst, secret):
		k.stats.Conflicts++
	}
}

func (k *Keys) malformed(name string, line int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.stats.Lines++
	k.malformedLocked(name, line)
}

func (k *Keys) malformedLocked(name string, line int) {
	k.stats.Malformed++
	if k.stats.FirstMalformed == "" {
		k.stats.FirstMalformed = fmt.Sprintf("%s:%d", name, line)
	}
}

// addSessionIDLocked adds an "RSA Session-ID:HEX Master-Key:HEX" line:
// a TLS 1.2 master secret (48 bytes) by session id (1 to 32 bytes).
func (k *Keys) addSessionIDLocked(id, master []byte, name string, line int) {
	idHex, ok1 := bytes.CutPrefix(id, []byte("Session-ID:"))
	mHex, ok2 := bytes.CutPrefix(master, []byte("Master-Key:"))
	n := hex.DecodedLen(len(idHex))
	if !ok1 || !ok2 || n < 1 || n > 32 || hex.DecodedLen(len(mHex)) != 48 {
		k.malformedLocked(name, line)
		return
	}
	sid := make([]byte, n)
	secret := make(Secret, 48)
	if _, err := hex.Decode(sid, idHex); err != nil {
		k.malformedLocked(name, line)
		return
	}
	if _, err := hex.Decode(secret, mHex); err != nil {
		k.malformedLocked(name, line)
		return
	}
	switch old, ok := k.bySessionID[string(sid)]; {
	case !ok:
		k.bySessionID[string(sid)] = secret
		k.stats.Secrets++
	case !bytes.Equal(old, secret):
		k.stats.Conflicts++
	}
}
