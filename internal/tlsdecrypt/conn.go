// Package tlsdecrypt turns one TCP connection's TLS records back into the
// bytes the application sent, with the session secrets of an NSS key log
// (package tlskeys): the layer between the capture's reassembled streams
// and the Kafka wire decoder. TLS 1.3 (its handshake and application
// traffic secrets, key updates) and TLS 1.2 (the master secret's key
// block) with the AEAD suites: AES-GCM and ChaCha20-Poly1305, from the
// Go standard library and golang.org/x/crypto.
//
// The bytes are untrusted: a record longer than TLS allows, a handshake
// message longer than maxHandshake, or a record that fails to decrypt
// stops the connection's decryption with a reason (Status, Reason), and
// nothing after that is invented. A connection whose session is not in
// the key log is NoKeys, not garbage.
//
// A key log may still be growing while a live capture is read (the
// broker's agent writes a session's secrets as it derives them, which for
// a TLS 1.2 client's ChangeCipherSpec is after the capture saw it): a
// connection whose secrets are missing waits for them, holding its
// records up to maxAwait bytes, and asks its KeySource again at every
// Feed. Close ends the wait.
package tlsdecrypt

import (
	"bytes"
	"crypto/cipher"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/kscope-dev/kscope/internal/tlskeys"
)

// Direction is which way bytes flow on a connection.
type Direction int

// The two directions.
const (
	ClientToServer Direction = 0
	ServerToClient Direction = 1
)

// Status is how far decrypting a connection got.
type Status int

// Statuses.
const (
	// Handshaking: the hellos are being read; no application data yet.
	Handshaking Status = iota
	// Decrypting: keys found, records decrypt.
	Decrypting
	// NoKeys: the key log has no secrets for this session.
	NoKeys
	// Failed: a record did not decrypt (a wrong key), or a suite this
	// package cannot decrypt.
	Failed
	// NotTLS: the bytes are not TLS records.
	NotTLS
	// Lost: the capture lost bytes of the connection; records after a
	// gap cannot be decrypted (their sequence numbers are unknown).
	Lost
)

func (s Status) String() string {
	return [...]string{"handshaking", "decrypting", "no-keys", "failed", "not-tls", "lost"}[s]
}

// StartsRecord reports whether b starts with a TLS record header (content
// type 20-23, version 3.x, a length TLS allows), as a TLS connection's
// first bytes do; fewer than 5 bytes are judged by what is there.
func StartsRecord(b []byte) bool {
	if len(b) < 3 || b[0] < recordCCS || b[0] > recordAppData || b[1] != 3 || b[2] > 4 {
		return false
	}
	return len(b) < 5 || int(binary.BigEndian.Uint16(b[3:5])) <= maxRecord
}

// KeySource finds the secrets of a session by its client random: a
// *tlskeys.Keys, or a *tlskeys.File that reads what a growing key log
// added since. A source that also has an Empty method saying it has no
// key log at all makes connections stop at once ("no TLS key log
// given") instead of waiting for secrets; one with a Describe method
// names where its secrets come from in the reasons of connections it has
// none for (else "the key log").
type KeySource interface {
	Lookup(tlskeys.ClientRandom) (tlskeys.Session, bool)
}

// Record says where a decrypted record lay in its direction's stream: the
// offsets (bytes fed before it) of its header and of its end, so that a
// caller can give its plaintext the capture times of its packets.
type Record struct {
	Start, End int64
}

// EmitFunc receives a record's application data, valid until it returns.
type EmitFunc func(dir Direction, plain []byte, rec Record)

// Limits on untrusted lengths: TLS 1.2 allows a ciphertext of 2^14+2048
// bytes; a handshake message (certificate chains) is bounded here.
const (
	maxRecord    = 1<<14 + 2048
	maxHandshake = 256 << 10
	// maxAwait bounds the bytes held while a connection waits for its
	// secrets to appear in the key log.
	maxAwait = 256 << 10
)

// TLS record content types and handshake message types.
const (
	recordCCS       = 20
	recordAlert     = 21
	recordHandshake = 22
	recordAppData   = 23

	hsClientHello = 1
	hsServerHello = 2
	hsFinished    = 20
	hsKeyUpdate   = 24
)

const (
	versionTLS12 = 0x0303
	versionTLS13 = 0x0304
)

// helloRetryRandom is the ServerHello random of a HelloRetryRequest
// (RFC 8446, 4.1.3).
var helloRetryRandom = sha256.Sum256([]byte("HelloRetryRequest"))

// Conn decrypts one connection. Feed it each direction's stream bytes in
// capture order.
type Conn struct {
	keys         KeySource
	clientRandom tlskeys.ClientRandom
	serverRandom [32]byte
	sessionID    []byte // the ServerHello's (TLS 1.2 key logs may name sessions by it)
	// offeredSessionID is the ClientHello's: the ServerHello echoes it
	// when it resumes that session (TLS 1.2).
	offeredSessionID []byte
	haveClient       bool
	haveServer       bool
	version          uint16
	suite            *suite
	status           Status
	reason           string
	dirs             [2]dirState
	// await is the secret lookup the connection waits for (nil when
	// it waits for nothing).
	await *await
	order func(dir Direction, end int64) int64
	// resyncs counts the gaps after which records were found again.
	resyncs int
}

// await is a lookup that found no secrets yet: install is tried again
// with the session's secrets until it reports that they were there.
type await struct {
	dir     Direction // the direction blocked
	reason  string    // why, if the secrets never come
	install func(tlskeys.Session) (bool, error)
}

// dirState is one direction's record layer.
type dirState struct {
	buf       []byte  // stream bytes not yet a whole record
	bufStart  int64   // stream offset of buf[0]
	off       int     // bytes of buf handled (records decrypted)
	resync    *resync // after a capture gap: looking for the next record
	hs        []byte  // handshake bytes not yet a whole message
	encrypted bool
	aead      cipher.AEAD
	iv        []byte
	seq       uint64
	secret    []byte // TLS 1.3: the current traffic secret
	plain     []byte // decryption scratch
	nonce     [12]byte
	aad       [13]byte
}

// New starts decrypting a connection with the secrets in keys; with nil
// keys (no key log) it only follows the handshake, to say whether the
// connection needed keys.
func New(keys KeySource) *Conn { return &Conn{keys: keys} }

// Status and Reason say how far decryption got, and why it stopped.
func (c *Conn) Status() Status { return c.status }

// Reason says why the connection is NoKeys, Failed or NotTLS.
func (c *Conn) Reason() string { return c.reason }

// Version is the negotiated TLS version (0x0303, 0x0304), 0 before the
// ServerHello.
func (c *Conn) Version() uint16 { return c.version }

// Suite names the negotiated cipher suite, "" before the ServerHello.
func (c *Conn) Suite() string {
	if c.suite == nil {
		return ""
	}
	return c.suite.name
}

// errStopped is returned once the connection cannot be decrypted.
var errStopped = errors.New("tls: connection not decrypted")

// Feed reads stream bytes of one direction and calls emit with each
// piece of application data they complete (in either direction: records
// held while waiting for secrets are emitted when they come). After a
// NoKeys, Failed, NotTLS or Lost status it does nothing and returns an
// error saying why.
func (c *Conn) Feed(dir Direction, data []byte, emit EmitFunc) error {
	if c.status > Decrypting {
		return fmt.Errorf("%w: %s: %s", errStopped, c.status, c.reason)
	}
	d := &c.dirs[dir]
	d.buf = append(d.buf, data...)
	if c.await != nil {
		if len(c.dirs[0].buf)+len(c.dirs[1].buf) > maxAwait {
			return c.stop(NoKeys, c.await.reason)
		}
		if ok, err := c.retry(); err != nil || !ok {
			return err
		}
		dir = c.await.dir
		c.await = nil
	}
	err := c.drain(dir, emit)
	for i := range c.dirs {
		c.dirs[i].compact()
	}
	return err
}

// SetOrder gives the connection the capture time (any number that grows
// with it) at which the record of dir ending at stream offset end had
// arrived. Records held while the connection waited for its secrets are
// then handled in the order they were captured across both directions
// (a request, the response to it, the next request), as a Kafka decoder
// pairing them needs; without it, the blocked direction's go first.
func (c *Conn) SetOrder(fn func(dir Direction, end int64) int64) { c.order = fn }

// drain handles the whole records buffered in both directions, first's
// first (or in capture order, SetOrder), until one needs secrets the key
// log does not have yet.
func (c *Conn) drain(first Direction, emit EmitFunc) error {
	for c.await == nil && c.status <= Decrypting {
		var size [2]int
		for i := range c.dirs {
			n, err := c.peek(Direction(i))
			if err != nil {
				return err
			}
			size[i] = n
		}
		other := 1 - first
		dir := first
		switch {
		case size[first] > 0 && size[other] > 0 && c.order != nil:
			d, o := &c.dirs[first], &c.dirs[other]
			if c.order(other, o.front()+int64(size[other])) < c.order(first, d.front()+int64(size[first])) {
				dir = other
			}
		case size[first] > 0:
		case size[other] > 0:
			dir = other
		default:
			return nil
		}
		d := &c.dirs[dir]
		b := d.buf[d.off : d.off+size[dir]]
		rec := Record{Start: d.front(), End: d.front() + int64(size[dir])}
		d.off += size[dir]
		if err := c.record(dir, b[:5], b[5:], rec, emit); err != nil {
			return err
		}
	}
	return nil
}

// peek returns the size of the whole record at the front of dir's
// buffer, 0 when there is none yet.
func (c *Conn) peek(dir Direction) (int, error) {
	if c.dirs[dir].resync != nil {
		return c.findRecord(dir)
	}
	rest := c.dirs[dir].buf[c.dirs[dir].off:]
	if len(rest) < 5 {
		return 0, nil
	}
	typ, ver, n := rest[0], binary.BigEndian.Uint16(rest[1:3]), int(binary.BigEndian.Uint16(rest[3:5]))
	if typ < recordCCS || typ > recordAppData || ver>>8 != 3 || n > maxRecord {
		return 0, c.stop(NotTLS, fmt.Sprintf("%s: record header %x is not TLS", dir, rest[:5]))
	}
	if len(rest) < 5+n {
		return 0, nil
	}
	return 5 + n, nil
}

// front is the stream offset of the first byte not handled yet.
func (d *dirState) front() int64 { return d.bufStart + int64(d.off) }

// compact moves the bytes not handled yet to the buffer's start (no
// allocation: the buffer keeps its array).
func (d *dirState) compact() {
	if d.off == 0 {
		return
	}
	n := copy(d.buf, d.buf[d.off:])
	d.buf, d.bufStart, d.off = d.buf[:n], d.bufStart+int64(d.off), 0
}

// sessionIDSource is a KeySource that also finds TLS 1.2 master secrets
// by session id (key logs with "RSA Session-ID:... Master-Key:..." lines).
type sessionIDSource interface {
	LookupSessionID(id []byte) (tlskeys.Secret, bool)
}

// describer is a KeySource that says where its secrets come from ("key
// log keys.log", "the capture's secrets blocks"), for the reasons of the
// connections it has no secrets for.
type describer interface{ Describe() string }

// secretsFrom names where the secrets were looked for.
func (c *Conn) secretsFrom() string {
	if d, ok := c.keys.(describer); ok {
		if s := d.Describe(); s != "" {
			return s
		}
	}
	return "the key log"
}

// refresher is a KeySource that can read what its key log added since
// (tlskeys.File): a session found with some of its secrets (a TLS 1.3
// handshake's, before its traffic secrets were written) needs it, since a
// lookup that finds the session does not read the key log again.
type refresher interface{ Refresh() }

// retry looks the secrets the connection waits for up again: by client
// random, and for TLS 1.2 by session id too; if they are not all there,
// once more after the key log was read again.
func (c *Conn) retry() (bool, error) {
	for attempt := range 2 {
		sess, ok := c.lookup()
		if ok {
			if done, err := c.await.install(sess); done || err != nil {
				return done, err
			}
		}
		r, can := c.keys.(refresher)
		if !can || attempt == 1 {
			break
		}
		r.Refresh()
	}
	return false, nil
}

// lookup finds the session's secrets.
func (c *Conn) lookup() (tlskeys.Session, bool) {
	sess, ok := c.keys.Lookup(c.clientRandom)
	if sess.Master == nil && c.version == versionTLS12 && len(c.sessionID) > 0 {
		if src, can := c.keys.(sessionIDSource); can {
			if m, found := src.LookupSessionID(c.sessionID); found {
				sess.Master, ok = m, true
			}
		}
	}
	return sess, ok
}

// withKeys installs the session's secrets now, or waits for them.
func (c *Conn) withKeys(dir Direction, reason string, install func(tlskeys.Session) (bool, error)) error {
	if c.keys == nil {
		return c.stop(NoKeys, "no TLS key log given")
	}
	if e, ok := c.keys.(interface{ Empty() bool }); ok && e.Empty() {
		return c.stop(NoKeys, "no TLS key log given")
	}
	c.await = &await{dir: dir, reason: reason, install: install}
	ok, err := c.retry()
	if ok || err != nil {
		c.await = nil
	}
	return err
}

// Close ends the connection: one still waiting for its secrets is NoKeys.
func (c *Conn) Close() {
	if c.await != nil && c.status <= Decrypting {
		_ = c.stop(NoKeys, c.await.reason)
	}
}

// Gap says that the capture lost n bytes of dir's stream: nothing after
// them can be decrypted.
// A negative n says the capture began after the connection did: without
// its handshake there is no client random to find the secrets by.
func (c *Conn) Gap(dir Direction, n int) {
	switch {
	case c.status > Decrypting:
	case n < 0:
		_ = c.stop(NoKeys, "the capture began after the connection's handshake")
	case c.await != nil || c.dirs[dir].aead == nil:
		_ = c.stop(Lost, fmt.Sprintf("%s: the capture lost %d bytes of the handshake", dir, n))
	default:
		c.lose(dir, n)
	}
}

// Held is the stream offset of the first byte of dir not yet decrypted:
// a caller may forget the capture times of the bytes before it.
func (c *Conn) Held(dir Direction) int64 { return c.dirs[dir].front() }

func (c *Conn) stop(s Status, reason string) error {
	c.status, c.reason = s, reason
	c.await = nil
	for i := range c.dirs {
		c.dirs[i] = dirState{bufStart: c.dirs[i].bufStart + int64(len(c.dirs[i].buf))}
	}
	return fmt.Errorf("%w: %s: %s", errStopped, s, reason)
}

func (dir Direction) String() string {
	if dir == ClientToServer {
		return "client to server"
	}
	return "server to client"
}

// record handles one whole record.
func (c *Conn) record(dir Direction, hdr, body []byte, rec Record, emit EmitFunc) error {
	d := &c.dirs[dir]
	typ := hdr[0]
	if !d.encrypted {
		switch typ {
		case recordHandshake:
			return c.handshake(dir, body)
		case recordCCS:
			if c.version == versionTLS13 {
				return nil // middlebox compatibility (RFC 8446, D.4)
			}
			return c.startTLS12(dir)
		case recordAlert:
			return nil
		default:
			if !c.haveClient && !c.haveServer {
				return c.stop(NoKeys, "no handshake seen (the capture began after it)")
			}
			return c.stop(NotTLS, fmt.Sprintf("%s: application data before the handshake", dir))
		}
	}
	if typ == recordCCS && c.version == versionTLS13 {
		return nil
	}
	plain, inner, err := c.open(d, hdr, body)
	if err != nil {
		return c.stop(Failed, fmt.Sprintf("%s: record %d did not decrypt (wrong key?)", dir, d.seq))
	}
	switch inner {
	case recordAppData:
		c.status = Decrypting
		emit(dir, plain, rec)
	case recordHandshake:
		return c.handshake(dir, plain)
	}
	return nil
}

// open decrypts a record: its plaintext and content type.
func (c *Conn) open(d *dirState, hdr, body []byte) ([]byte, byte, error) {
	seq := d.seq
	d.seq++
	return c.openSeq(d, seq, hdr, body)
}

// openSeq decrypts a record as the one with sequence number seq.
func (c *Conn) openSeq(d *dirState, seq uint64, hdr, body []byte) ([]byte, byte, error) {
	if c.version == versionTLS13 {
		copy(d.nonce[:], d.iv)
		for i := range 8 {
			d.nonce[4+i] ^= byte(seq >> (56 - 8*i))
		}
		p, err := d.aead.Open(d.plain[:0], d.nonce[:], body, hdr)
		if err != nil {
			return nil, 0, err
		}
		d.plain = p
		// The inner content type is the last non-zero byte.
		i := len(p) - 1
		for i >= 0 && p[i] == 0 {
			i--
		}
		if i < 0 {
			return nil, 0, errors.New("no content type")
		}
		return p[:i], p[i], nil
	}
	ciphertext := body
	if c.suite.chacha {
		copy(d.nonce[:], d.iv)
		for i := range 8 {
			d.nonce[4+i] ^= byte(seq >> (56 - 8*i))
		}
	} else {
		if len(body) < 8 {
			return nil, 0, errors.New("short record")
		}
		copy(d.nonce[:4], d.iv)
		copy(d.nonce[4:], body[:8])
		ciphertext = body[8:]
	}
	if len(ciphertext) < d.aead.Overhead() {
		return nil, 0, errors.New("short record")
	}
	binary.BigEndian.PutUint64(d.aad[:8], seq)
	copy(d.aad[8:11], hdr[:3])
	binary.BigEndian.PutUint16(d.aad[11:], uint16(len(ciphertext)-d.aead.Overhead()))
	p, err := d.aead.Open(d.plain[:0], d.nonce[:d.aead.NonceSize()], ciphertext, d.aad[:])
	if err != nil {
		return nil, 0, err
	}
	d.plain = p
	return p, hdr[0], nil
}

// handshake reads handshake messages (plaintext, or decrypted in TLS
// 1.3), which may span records.
func (c *Conn) handshake(dir Direction, b []byte) error {
	d := &c.dirs[dir]
	d.hs = append(d.hs, b...)
	rest := d.hs
	for len(rest) >= 4 {
		n := int(rest[1])<<16 | int(rest[2])<<8 | int(rest[3])
		if n > maxHandshake {
			return c.stop(NotTLS, fmt.Sprintf("%s: handshake message of %d bytes", dir, n))
		}
		if len(rest) < 4+n {
			break
		}
		if err := c.message(dir, rest[0], rest[4:4+n]); err != nil {
			return err
		}
		if c.status > Decrypting {
			return nil
		}
		rest = rest[4+n:]
		if c.await != nil {
			break // the rest waits with the records after it
		}
	}
	if len(d.hs) > 0 {
		d.hs = append(d.hs[:0], rest...)
	}
	return nil
}

// message handles one handshake message.
func (c *Conn) message(dir Direction, typ byte, m []byte) error {
	d := &c.dirs[dir]
	switch {
	case typ == hsClientHello && dir == ClientToServer && !d.encrypted:
		if len(m) < 34 {
			return c.stop(NotTLS, "short ClientHello")
		}
		copy(c.clientRandom[:], m[2:34])
		c.haveClient = true
		if len(m) > 34 && len(m) >= 35+int(m[34]) {
			c.offeredSessionID = bytes.Clone(m[35 : 35+int(m[34])])
		}
	case typ == hsServerHello && dir == ServerToClient && !d.encrypted:
		return c.serverHello(m)
	case typ == hsFinished && c.version == versionTLS13 && d.encrypted:
		// The sender's next records use its application traffic secret.
		return c.withKeys(dir, fmt.Sprintf("no %s application traffic secret for the session in %s", dir, c.secretsFrom()),
			func(s tlskeys.Session) (bool, error) {
				secret := s.ClientTraffic
				if dir == ServerToClient {
					secret = s.ServerTraffic
				}
				if secret == nil {
					return false, nil
				}
				return true, c.useSecret(d, secret)
			})
	case typ == hsKeyUpdate && c.version == versionTLS13 && d.encrypted && d.secret != nil:
		next, err := c.suite.nextSecret(d.secret)
		if err != nil {
			return c.stop(Failed, err.Error())
		}
		return c.useSecret(d, next)
	}
	return nil
}

// serverHello reads the negotiated version, random and suite; for TLS
// 1.3 both directions then switch to the handshake traffic secrets.
func (c *Conn) serverHello(m []byte) error {
	if len(m) < 35 {
		return c.stop(NotTLS, "short ServerHello")
	}
	var random [32]byte
	copy(random[:], m[2:34])
	if random == helloRetryRandom {
		return nil // a HelloRetryRequest: the real ServerHello follows
	}
	version := binary.BigEndian.Uint16(m[:2])
	p := 35 + int(m[34]) // after the session id
	if len(m) < p+3 {
		return c.stop(NotTLS, "short ServerHello")
	}
	c.sessionID = bytes.Clone(m[35:p])
	id := binary.BigEndian.Uint16(m[p:])
	if v, ok := supportedVersion(m[p+3:]); ok {
		version = v
	}
	c.serverRandom, c.haveServer, c.version = random, true, version
	s, ok := suites[id]
	if !ok {
		return c.stop(Failed, fmt.Sprintf("cipher suite %#04x is not one this decrypts", id))
	}
	c.suite = &s
	if version != versionTLS13 {
		if version != versionTLS12 {
			return c.stop(Failed, fmt.Sprintf("TLS version %#04x is not decrypted", version))
		}
		return nil // keys at each direction's ChangeCipherSpec
	}
	if !c.haveClient {
		return c.stop(NoKeys, "no ClientHello seen (the capture began after it)")
	}
	return c.withKeys(ServerToClient, "no TLS 1.3 handshake secrets for the session in "+c.secretsFrom(),
		func(sess tlskeys.Session) (bool, error) {
			if sess.ClientHandshake == nil || sess.ServerHandshake == nil {
				return false, nil
			}
			for dir, secret := range [][]byte{sess.ClientHandshake, sess.ServerHandshake} {
				d := &c.dirs[dir]
				d.encrypted = true
				d.hs = d.hs[:0]
				if err := c.useSecret(d, secret); err != nil {
					return false, err
				}
			}
			return true, nil
		})
}

// supportedVersion reads the supported_versions extension (43) of a
// ServerHello's extensions block.
func supportedVersion(b []byte) (uint16, bool) {
	if len(b) < 2 {
		return 0, false
	}
	n := int(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n < len(b) {
		b = b[:n]
	}
	for len(b) >= 4 {
		typ, l := binary.BigEndian.Uint16(b), int(binary.BigEndian.Uint16(b[2:]))
		if len(b) < 4+l {
			return 0, false
		}
		if typ == 43 && l == 2 {
			return binary.BigEndian.Uint16(b[4:]), true
		}
		b = b[4+l:]
	}
	return 0, false
}

// useSecret switches a direction to a TLS 1.3 traffic secret.
func (c *Conn) useSecret(d *dirState, secret []byte) error {
	key, iv, err := c.suite.trafficKeys(secret)
	if err == nil {
		d.aead, err = c.suite.aead(key)
	}
	if err != nil {
		return c.stop(Failed, err.Error())
	}
	d.iv, d.seq, d.secret = iv, 0, bytes.Clone(secret)
	return nil
}

// startTLS12 switches a direction to the TLS 1.2 key block at its
// ChangeCipherSpec.
func (c *Conn) startTLS12(dir Direction) error {
	if c.suite == nil || !c.haveClient || !c.haveServer {
		return c.stop(NoKeys, "ChangeCipherSpec before both hellos were seen (the capture began after them)")
	}
	reason := "no master secret for the session in " + c.secretsFrom()
	if len(c.sessionID) > 0 && bytes.Equal(c.sessionID, c.offeredSessionID) {
		reason = "a resumed TLS 1.2 session whose master secret is not in " + c.secretsFrom() + " (its full handshake was before the key log began)"
	}
	return c.withKeys(dir, reason,
		func(sess tlskeys.Session) (bool, error) {
			if sess.Master == nil {
				return false, nil
			}
			ck, sk, civ, siv := c.suite.keyBlock(sess.Master, c.clientRandom[:], c.serverRandom[:])
			key, iv := ck, civ
			if dir == ServerToClient {
				key, iv = sk, siv
			}
			d := &c.dirs[dir]
			aead, err := c.suite.aead(key)
			if err != nil {
				return false, c.stop(Failed, err.Error())
			}
			d.aead, d.iv, d.seq, d.encrypted = aead, iv, 0, true
			d.hs = d.hs[:0]
			return true, nil
		})
}
