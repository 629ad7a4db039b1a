package tlsdecrypt

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/tlskeys"
)

// chunk is what one side wrote to the socket.
type chunk struct {
	dir  Direction
	data []byte
}

// tapConn records the client's socket: what it writes (client to server)
// and what it reads (server to client), in order.
type tapConn struct {
	net.Conn
	mu     *sync.Mutex
	chunks *[]chunk
}

func (t tapConn) Write(b []byte) (int, error) {
	t.mu.Lock()
	*t.chunks = append(*t.chunks, chunk{ClientToServer, bytes.Clone(b)})
	t.mu.Unlock()
	return t.Conn.Write(b)
}

func (t tapConn) Read(b []byte) (int, error) {
	n, err := t.Conn.Read(b)
	t.mu.Lock()
	*t.chunks = append(*t.chunks, chunk{ServerToClient, bytes.Clone(b[:n])})
	t.mu.Unlock()
	return n, err
}

// conversation is a real TLS conversation between Go's crypto/tls client
// and server over loopback: the wire bytes both ways, the key log the
// client wrote, and the plaintext each side sent.
type conversation struct {
	chunks             []chunk
	keyLog             []byte
	toServer, toClient []byte
}

// selfSigned is a server certificate for the tests' TLS servers.
func selfSigned(t testing.TB) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kscope"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func converse(t testing.TB, client *tls.Config, server *tls.Config) conversation {
	t.Helper()
	server.Certificates = []tls.Certificate{selfSigned(t)}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var conv conversation
	// Requests of growing size, each answered by a longer response: many
	// records, some split over several reads.
	for i := range 40 {
		conv.toServer = append(conv.toServer, bytes.Repeat([]byte{byte('a' + i%26)}, 100*i+1)...)
	}
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		s := tls.Server(c, server)
		defer s.Close()
		buf := make([]byte, len(conv.toServer))
		if _, err := io.ReadFull(s, buf); err != nil {
			done <- err
			return
		}
		_, err = s.Write(bytes.Repeat(buf, 3))
		done <- err
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var kl bytes.Buffer
	client.KeyLogWriter, client.InsecureSkipVerify = &kl, true
	c := tls.Client(tapConn{raw, &mu, &conv.chunks}, client)
	if _, err := c.Write(conv.toServer); err != nil {
		t.Fatal(err)
	}
	want := 3 * len(conv.toServer)
	got := make([]byte, want)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.Close()
	conv.toClient, conv.keyLog = got, kl.Bytes()
	return conv
}

func keysOf(t testing.TB, log []byte) *tlskeys.Keys {
	t.Helper()
	k := tlskeys.New()
	if err := k.Read(bytes.NewReader(log), "keylog"); err != nil {
		t.Fatal(err)
	}
	return k
}

// TestDecryptRealConversations: what Go's crypto/tls sent, both ways,
// comes back exactly, for TLS 1.3 and for TLS 1.2 with each AEAD suite.
func TestDecryptRealConversations(t *testing.T) {
	tests := []struct {
		name    string
		version uint16
		suite   uint16
		want    string
	}{
		{"TLS 1.3", tls.VersionTLS13, 0, "TLS_AES_128_GCM_SHA256"},
		{"TLS 1.2 ECDHE-ECDSA AES-128-GCM", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"},
		{"TLS 1.2 ECDHE-ECDSA AES-256-GCM", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"},
		{"TLS 1.2 ECDHE-ECDSA ChaCha20-Poly1305", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &tls.Config{MinVersion: tt.version, MaxVersion: tt.version}
			if tt.suite != 0 {
				cfg.CipherSuites = []uint16{tt.suite}
			}
			conv := converse(t, cfg, &tls.Config{MinVersion: tt.version, MaxVersion: tt.version})
			c := New(keysOf(t, conv.keyLog))
			var got [2][]byte
			for _, ch := range conv.chunks {
				if err := c.Feed(ch.dir, ch.data, func(dir Direction, p []byte, _ Record) { got[dir] = append(got[dir], p...) }); err != nil {
					t.Fatal(err)
				}
			}
			if c.Status() != Decrypting || c.Suite() != tt.want && !(tt.version == tls.VersionTLS13 && strings.HasPrefix(c.Suite(), "TLS_")) {
				t.Fatalf("status %s (%s), suite %s", c.Status(), c.Reason(), c.Suite())
			}
			if !bytes.Equal(got[ClientToServer], conv.toServer) || !bytes.Equal(got[ServerToClient], conv.toClient) {
				t.Errorf("decrypted %d and %d bytes, want %d and %d, equal", len(got[0]), len(got[1]), len(conv.toServer), len(conv.toClient))
			}
		})
	}
}

// TestDecryptWithoutKeys: the same conversation with no key log, or
// another session's, is NoKeys or Failed with a reason, and nothing is
// emitted.
func TestDecryptWithoutKeys(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		conv := converse(t, &tls.Config{MinVersion: version, MaxVersion: version}, &tls.Config{})
		other := converse(t, &tls.Config{MinVersion: version, MaxVersion: version}, &tls.Config{})
		// Another session's secrets under this session's client random: a
		// wrong key.
		wrong := bytes.Clone(other.keyLog)
		for _, line := range strings.Split(strings.TrimSpace(string(conv.keyLog)), "\n") {
			f := strings.Fields(line)
			for _, oline := range strings.Split(strings.TrimSpace(string(other.keyLog)), "\n") {
				o := strings.Fields(oline)
				if o[0] == f[0] {
					wrong = append(wrong, []byte(o[0]+" "+f[1]+" "+o[2]+"\n")...)
				}
			}
		}
		for _, tc := range []struct {
			name string
			log  []byte
			want Status
		}{{"no key log", nil, NoKeys}, {"a wrong key", wrong, Failed}} {
			c := New(keysOf(t, tc.log))
			emitted := 0
			for _, ch := range conv.chunks {
				if c.Feed(ch.dir, ch.data, func(Direction, []byte, Record) { emitted++ }) != nil {
					break
				}
			}
			c.Close()
			if c.Status() != tc.want || emitted != 0 || c.Reason() == "" {
				t.Errorf("TLS %#x, %s: status %s (%q), %d emitted; want %s, a reason, nothing", version, tc.name, c.Status(), c.Reason(), emitted, tc.want)
			}
		}
	}
}

// TestKeysArriveLate: a key log that gets a session's secrets only after
// the capture has read part of its encrypted records (a live capture
// racing the broker's agent) still yields every byte, in order, once they
// are there.
func TestKeysArriveLate(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		conv := converse(t, &tls.Config{MinVersion: version, MaxVersion: version}, &tls.Config{})
		held := 0
		for late := range len(conv.chunks) {
			if held > maxAwait/2 {
				break // longer waits give up (TestKeysNeverArrive)
			}
			held += len(conv.chunks[late].data)
			keys := tlskeys.New()
			c := New(keys)
			var got [2][]byte
			var ends [2]int64
			for i, ch := range conv.chunks {
				if i == late {
					if err := keys.Read(bytes.NewReader(conv.keyLog), "late"); err != nil {
						t.Fatal(err)
					}
				}
				err := c.Feed(ch.dir, ch.data, func(dir Direction, p []byte, rec Record) {
					if rec.Start < ends[dir] || rec.End <= rec.Start {
						t.Errorf("record %+v after one that ended at %d", rec, ends[dir])
					}
					ends[dir] = rec.End
					got[dir] = append(got[dir], p...)
				})
				if err != nil {
					t.Fatalf("TLS %#x, keys at chunk %d: %v", version, late, err)
				}
			}
			if !bytes.Equal(got[ClientToServer], conv.toServer) || !bytes.Equal(got[ServerToClient], conv.toClient) {
				t.Errorf("TLS %#x, keys at chunk %d of %d: decrypted %d and %d bytes, want %d and %d", version, late, len(conv.chunks), len(got[0]), len(got[1]), len(conv.toServer), len(conv.toClient))
			}
		}
	}
}

// TestKeysNeverArrive: waiting for secrets holds at most maxAwait bytes.
func TestKeysNeverArrive(t *testing.T) {
	conv := converse(t, &tls.Config{MinVersion: tls.VersionTLS13}, &tls.Config{})
	c := New(tlskeys.New())
	var err error
	fed := 0
	for _, ch := range conv.chunks {
		fed += len(ch.data)
		if err = c.Feed(ch.dir, ch.data, func(Direction, []byte, Record) { t.Fatal("plaintext without keys") }); err != nil {
			break
		}
	}
	if fed <= maxAwait || err == nil || c.Status() != NoKeys || !strings.Contains(c.Reason(), "key log") {
		t.Errorf("after %d bytes: %v, status %s (%q); want NoKeys after %d", fed, err, c.Status(), c.Reason(), maxAwait)
	}
}

// TestNoKeyLog: without a key log a connection stops at the first secret
// it needs, holding nothing.
func TestNoKeyLog(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		conv := converse(t, &tls.Config{MinVersion: version, MaxVersion: version}, &tls.Config{})
		c := New(nil)
		fed, stoppedAt := 0, 0
		for _, ch := range conv.chunks {
			fed += len(ch.data)
			if c.Feed(ch.dir, ch.data, func(Direction, []byte, Record) { t.Fatal("plaintext without keys") }) != nil && stoppedAt == 0 {
				stoppedAt = fed
			}
		}
		if c.Status() != NoKeys || c.Reason() != "no TLS key log given" || stoppedAt == 0 || stoppedAt > 16<<10 {
			t.Errorf("TLS %#x: status %s (%q) after %d bytes", version, c.Status(), c.Reason(), stoppedAt)
		}
	}
}

func TestNotTLS(t *testing.T) {
	c := New(tlskeys.New())
	err := c.Feed(ClientToServer, []byte("\x00\x00\x00\x10kafka request..."), func(Direction, []byte, Record) {})
	if err == nil || c.Status() != NotTLS {
		t.Errorf("status %s, error %v", c.Status(), err)
	}
}

func FuzzConn(f *testing.F) {
	f.Add([]byte{22, 3, 1, 0, 5, 1, 0, 0, 1, 0}, false)
	f.Add([]byte{23, 3, 3, 0, 2, 0, 0}, true)
	f.Fuzz(func(t *testing.T, data []byte, server bool) {
		c := New(tlskeys.New())
		dir := ClientToServer
		if server {
			dir = ServerToClient
		}
		for len(data) > 0 {
			n := min(len(data), 7)
			if c.Feed(dir, data[:n], func(Direction, []byte, Record) { t.Fatal("plaintext without keys") }) != nil {
				return
			}
			data = data[n:]
			dir = 1 - dir
		}
	})
}

// TestResumedWithoutKeys: a TLS 1.2 session resumed from one whose keys
// are not in the key log says so.
func TestResumedWithoutKeys(t *testing.T) {
	client := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(4), ServerName: "broker"}
	server := &tls.Config{}
	first := converse(t, client, server)
	second := converse(t, client, server)
	c := New(keysOf(t, first.keyLog)) // not the second connection's
	for _, ch := range second.chunks {
		if c.Feed(ch.dir, ch.data, func(Direction, []byte, Record) { t.Fatal("plaintext without keys") }) != nil {
			break
		}
	}
	c.Close()
	if c.Status() != NoKeys || !strings.Contains(c.Reason(), "resumed") {
		t.Errorf("status %s (%q); want no-keys for a resumed session", c.Status(), c.Reason())
	}
}

// describedKeys are secrets that say where they come from.
type describedKeys struct {
	*tlskeys.Keys
	from string
}

func (k describedKeys) Describe() string { return k.from }

// TestReasonNamesWhereSecretsCameFrom: a connection without secrets says
// where they were looked for (secrets from a capture's own blocks are not
// "in the key log"), for TLS 1.2 and 1.3; a source that does not say is
// called the key log.
func TestReasonNamesWhereSecretsCameFrom(t *testing.T) {
	for _, tt := range []struct {
		name   string
		client *tls.Config
		keys   KeySource
		want   string
	}{
		{"TLS 1.3, the capture's blocks", &tls.Config{MinVersion: tls.VersionTLS13}, describedKeys{tlskeys.New(), "the capture's secrets blocks"},
			"no TLS 1.3 handshake secrets for the session in the capture's secrets blocks"},
		{"TLS 1.2, a key log and the capture's blocks", &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12},
			describedKeys{tlskeys.New(), "key log k.log or the capture's secrets blocks"},
			"no master secret for the session in key log k.log or the capture's secrets blocks"},
		{"TLS 1.3, keys that do not say", &tls.Config{MinVersion: tls.VersionTLS13}, tlskeys.New(),
			"no TLS 1.3 handshake secrets for the session in the key log"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conv := converse(t, tt.client, &tls.Config{})
			c := New(tt.keys)
			for _, ch := range conv.chunks {
				if c.Feed(ch.dir, ch.data, func(Direction, []byte, Record) { t.Fatal("plaintext without keys") }) != nil {
					break
				}
			}
			c.Close()
			if c.Status() != NoKeys || c.Reason() != tt.want {
				t.Errorf("status %s (%q); want no-keys (%q)", c.Status(), c.Reason(), tt.want)
			}
		})
	}
}

// TestGapResync: after the capture loses the middle of a record, the
// records after it are found and decrypted again, for both versions and
// every suite family; what comes out after the gap is the conversation's
// tail, exactly.
func TestGapResync(t *testing.T) {
	for _, tt := range []struct {
		name   string
		client *tls.Config
	}{
		{"TLS 1.3", &tls.Config{MinVersion: tls.VersionTLS13}},
		{"TLS 1.2 AES-GCM", &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256}}},
		{"TLS 1.2 ChaCha20", &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			conv := converse(t, tt.client, &tls.Config{})
			// The server's answer comes in many records: lose the middle
			// of one well into it.
			var server []int
			for i, ch := range conv.chunks {
				if ch.dir == ServerToClient && len(ch.data) > 200 {
					server = append(server, i)
				}
			}
			if len(server) < 4 {
				t.Fatalf("%d server chunks", len(server))
			}
			cut := server[len(server)/2]
			c := New(keysOf(t, conv.keyLog))
			var got [2][]byte
			var after []byte // plaintext after the gap
			gapped := false
			emit := func(dir Direction, p []byte, _ Record) {
				got[dir] = append(got[dir], p...)
				if gapped && dir == ServerToClient {
					after = append(after, p...)
				}
			}
			for i, ch := range conv.chunks {
				data := ch.data
				if i == cut {
					if err := c.Feed(ch.dir, data[:40], emit); err != nil {
						t.Fatal(err)
					}
					c.Gap(ch.dir, len(data)-80)
					gapped = true
					data = data[len(data)-40:]
				}
				if err := c.Feed(ch.dir, data, emit); err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
			}
			if c.Status() != Decrypting || c.Resyncs() != 1 || len(after) == 0 || !bytes.HasSuffix(conv.toClient, after) {
				t.Errorf("status %s (%s), %d resyncs, %d bytes after the gap (a tail of what was sent: %v)",
					c.Status(), c.Reason(), c.Resyncs(), len(after), bytes.HasSuffix(conv.toClient, after))
			}
			if !bytes.Equal(got[ClientToServer], conv.toServer) {
				t.Error("the other direction was disturbed")
			}
		})
	}
}

// FuzzResync: a real TLS 1.3 conversation with a fuzzer-chosen stretch of
// one direction lost and replaced by fuzzer bytes (what a broken capture
// could hold) must not panic, must keep its search bounded, and whatever
// it decrypts after the gap must be a tail of what was sent.
func FuzzResync(f *testing.F) {
	conv := converse(f, &tls.Config{MinVersion: tls.VersionTLS13}, &tls.Config{})
	keys := keysOf(f, conv.keyLog)
	f.Add(uint16(12), uint16(40), uint16(300), []byte{23, 3, 3, 0, 40})
	f.Add(uint16(20), uint16(0), uint16(5), []byte{})
	f.Fuzz(func(t *testing.T, chunk, from, lost uint16, junk []byte) {
		c := New(keys)
		gapAt := int(chunk) % len(conv.chunks)
		var after []byte
		gapped := false
		emit := func(dir Direction, p []byte, _ Record) {
			if gapped && dir == ServerToClient {
				after = append(after, p...)
			}
		}
		for i, ch := range conv.chunks {
			data := ch.data
			if i == gapAt && ch.dir == ServerToClient {
				a := min(int(from), len(data))
				b := min(a+int(lost)+1, len(data))
				if c.Feed(ch.dir, data[:a], emit) != nil {
					return
				}
				c.Gap(ch.dir, b-a)
				gapped = true
				if c.Feed(ch.dir, junk, emit) != nil {
					return
				}
				data = data[b:]
			}
			if c.Feed(ch.dir, data, emit) != nil {
				return
			}
		}
		if !bytes.HasSuffix(conv.toClient, after) {
			t.Fatalf("%d bytes decrypted after the gap are not a tail of what was sent", len(after))
		}
	})
}

// TestSecretsWrittenInTwoSteps: an agent writes a TLS 1.3 session's
// handshake secrets, then its traffic secrets a moment later; a key log
// read in between has the session, but not all of it, and must be read
// again.
func TestSecretsWrittenInTwoSteps(t *testing.T) {
	conv := converse(t, &tls.Config{MinVersion: tls.VersionTLS13}, &tls.Config{})
	var handshake, traffic []byte
	for _, line := range strings.SplitAfter(string(conv.keyLog), "\n") {
		if strings.Contains(line, "HANDSHAKE") {
			handshake = append(handshake, line...)
		} else {
			traffic = append(traffic, line...)
		}
	}
	path := filepath.Join(t.TempDir(), "keys.log")
	if err := os.WriteFile(path, handshake, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := tlskeys.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	c := New(f)
	var got [2][]byte
	for i, ch := range conv.chunks {
		if i == len(conv.chunks)/2 {
			w, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(traffic)
			w.Close()
			time.Sleep(50 * time.Millisecond) // past the key log's refresh interval
		}
		if err := c.Feed(ch.dir, ch.data, func(dir Direction, p []byte, _ Record) { got[dir] = append(got[dir], p...) }); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
	}
	if !bytes.Equal(got[ClientToServer], conv.toServer) || !bytes.Equal(got[ServerToClient], conv.toClient) {
		t.Errorf("decrypted %d and %d bytes, want %d and %d", len(got[0]), len(got[1]), len(conv.toServer), len(conv.toClient))
	}
}
