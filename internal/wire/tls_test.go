package wire

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/binary"
	"fmt"
	"io"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gopacket/gopacket/layers"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/records"
	"github.com/kscope-dev/kscope/internal/tlsdecrypt"
	"github.com/kscope-dev/kscope/internal/tlskeys"
)

// tlsWrite is one write of a TLS connection's bytes, in the order the
// writes began.
type tlsWrite struct {
	fromClient bool
	data       []byte
}

// tapConn logs what is written to it.
type tapConn struct {
	net.Conn
	fromClient bool
	mu         *sync.Mutex
	log        *[]tlsWrite
}

func (c tapConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	*c.log = append(*c.log, tlsWrite{c.fromClient, bytes.Clone(b)})
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// scriptedOverTLS runs exchanges between Go's TLS client and server over
// a pipe: the client writes each request frame, the server reads one
// size-prefixed frame and answers with the response. It returns the TLS
// bytes written both ways and the client's key log.
func scriptedOverTLS(t *testing.T, version uint16, xs []exchange) ([]tlsWrite, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log []tlsWrite
	var keyLog bytes.Buffer
	cp, sp := net.Pipe()
	server := tls.Server(tapConn{sp, false, &mu, &log}, &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	client := tls.Client(tapConn{cp, true, &mu, &log}, &tls.Config{InsecureSkipVerify: true, MinVersion: version, MaxVersion: version, KeyLogWriter: &keyLog})
	done := make(chan error, 1)
	go func() {
		for _, x := range xs {
			var size [4]byte
			if _, err := io.ReadFull(server, size[:]); err != nil {
				done <- err
				return
			}
			if _, err := io.CopyN(io.Discard, server, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
				done <- err
				return
			}
			if _, err := server.Write(x.resp); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for _, x := range xs {
		if _, err := client.Write(x.req); err != nil {
			t.Fatal(err)
		}
		var size [4]byte
		if _, err := io.ReadFull(client, size[:]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.CopyN(io.Discard, client, int64(binary.BigEndian.Uint32(size[:]))); err != nil {
			t.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	cp.Close()
	sp.Close()
	return log, keyLog.Bytes()
}

// lateKeys finds no session until it has been asked misses times: a key
// log the broker's agent writes a moment after the capture saw the
// handshake.
type lateKeys struct {
	keys   *tlskeys.Keys
	misses int
}

func (k *lateKeys) Lookup(cr tlskeys.ClientRandom) (tlskeys.Session, bool) {
	if k.misses > 0 {
		k.misses--
		return tlskeys.Session{}, false
	}
	return k.keys.Lookup(cr)
}

// TestTLSKeysLateSASLv0: when the secrets come late, the records held
// meanwhile are decoded in capture order across both directions: the
// SaslHandshake v0 response before the raw token after it, so the token is
// taken as a token and the principal is known.
func TestTLSKeysLateSASLv0(t *testing.T) {
	xs := []exchange{
		{requestFrame(handshake("PLAIN"), 0, 1, "app"), responseFrame(kmsg.NewPtrSASLHandshakeResponse(), 0, 1)},
		{raw("\x00carol\x00" + testPassword), raw("")},
		{requestFrame(produceRequest("t", 0, -1, "m"), 9, 2, "app"), responseFrame(produceResponse("t", 0), 9, 2)},
	}
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		writes, keyLog := scriptedOverTLS(t, version, xs)
		for misses := range 30 {
			keys := tlskeys.New()
			if err := keys.Read(bytes.NewReader(keyLog), "keylog"); err != nil {
				t.Fatal(err)
			}
			reqs, d := decodeWith(tlsSegments(writes), &lateKeys{keys: keys, misses: misses})
			st := d.Stats()
			if st.TLSNoKeys == 1 {
				// Asked fewer times than that: the connection ended
				// waiting. Every later start of the keys is held longer.
				if misses < 5 {
					t.Errorf("%s: no keys after only %d misses", tls.VersionName(version), misses)
				}
				break
			}
			if len(reqs) != 2 || reqs[1].API != "Produce" || reqs[1].Principal != "carol" || !reqs[1].Answered ||
				st.SASLTokens != 2 || st.Resyncs != 0 || st.DecodeErrors != 0 || st.TLSDecrypted != 1 {
				var got []string
				for _, r := range reqs {
					got = append(got, fmt.Sprintf("%s(%s, answered %v)", r.API, r.Principal, r.Answered))
				}
				t.Errorf("%s, keys after %d misses: %v, stats %+v", tls.VersionName(version), misses, got, st)
			}
		}
	}
}

// kafkaOverTLS runs n produce requests, one at a time, between Go's TLS
// client and server over a pipe, the server answering each, and returns
// the TLS bytes written both ways and the client's key log.
func kafkaOverTLS(t *testing.T, version uint16, n int) ([]tlsWrite, []byte) {
	t.Helper()
	xs := make([]exchange, n)
	for i := range xs {
		req := produceRequest("t", 0, -1, fmt.Sprintf("m-%d", i), strings.Repeat("x", 3000*(i%4)))
		xs[i] = exchange{requestFrame(req, 9, int32(i+1), "tls-client"), responseFrame(produceResponse("t", 0), 9, int32(i+1))}
	}
	return scriptedOverTLS(t, version, xs)
}

// brokerWait is how long the test's broker takes to answer: every
// response is captured this long after the write before it.
const brokerWait = 7 * time.Millisecond

// tlsSegments turns a TLS conversation into captured TCP segments: the
// client's writes 100µs a segment apart, each of the broker's first
// writes brokerWait after the previous write.
func tlsSegments(writes []tlsWrite) []testSegment {
	c := newConversation(40000)
	c.handshake()
	for _, w := range writes {
		if !w.fromClient {
			c.now = c.now.Add(brokerWait)
		}
		c.send(w.fromClient, w.data, 1448, 100*time.Microsecond)
	}
	return c.segs
}

func decodeWith(segs []testSegment, keys tlsdecrypt.KeySource) ([]*event.Request, *Decoder) {
	cfg := DefaultConfig()
	cfg.TLSKeys = keys
	return decodeConfig(segs, cfg)
}

// decodeConfig feeds segments to a new decoder with cfg, closes it and
// returns what it emitted.
func decodeConfig(segs []testSegment, cfg Config) ([]*event.Request, *Decoder) {
	var out []*event.Request
	d := decodeEach(segs, cfg, func(r *event.Request) { out = append(out, r) })
	return out, d
}

// decodeEach feeds segments to a new decoder with cfg that calls emit,
// and closes it.
func decodeEach(segs []testSegment, cfg Config, emit func(*event.Request)) *Decoder {
	d := NewDecoder(cfg, &records.Decoder{}, nil, emit)
	pd := capture.NewDecoder()
	for _, s := range segs {
		seg, ok := pd.Decode(s.data, layers.LinkTypeRaw)
		if !ok {
			panic("test packet did not decode")
		}
		d.Packet(seg, s.ci)
	}
	d.Close()
	return d
}

// TestTLSDecrypted: Kafka over TLS 1.2 and 1.3, with the key log, is
// decoded as completely as plaintext: every request, its correlation id,
// partitions and message ids, with latencies from the packets that
// carried its records.
func TestTLSDecrypted(t *testing.T) {
	const n = 12
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		t.Run(tls.VersionName(version), func(t *testing.T) {
			writes, keyLog := kafkaOverTLS(t, version, n)
			keys := tlskeys.New()
			if err := keys.Read(bytes.NewReader(keyLog), "keylog"); err != nil {
				t.Fatal(err)
			}
			reqs, d := decodeWith(tlsSegments(writes), keys)
			st := d.Stats()
			if len(reqs) != n || st.TLSConnections != 1 || st.TLSDecrypted != 1 || st.SkippedBytes != 0 || st.Requests != n || st.Responses != n {
				t.Fatalf("%d requests, stats %+v; want %d, one decrypted connection", len(reqs), st, n)
			}
			for i, r := range reqs {
				p := r.Partitions
				if r.API != "Produce" || r.CorrelationID != int32(i+1) || !r.Answered || r.ClientID != "tls-client" ||
					len(p) != 1 || p[0].Topic != "t" || len(p[0].MessageIDs) != 2 || p[0].MessageIDs[0] != fmt.Sprintf("m-%d", i) {
					t.Errorf("request %d: %s corr %d answered %v client %q partitions %+v", i, r.API, r.CorrelationID, r.Answered, r.ClientID, p)
				}
				// The response's record is captured brokerWait after the
				// request's last segment, in one segment.
				if r.BrokerMs < ms(brokerWait) || r.BrokerMs > ms(brokerWait)+0.2 {
					t.Errorf("request %d: broker %.3f ms, want %.3f", i, r.BrokerMs, ms(brokerWait))
				}
				if r.LatencyMs < r.BrokerMs || r.LatencyMs > r.BrokerMs+0.1*float64(r.RequestBytes/1448+2) {
					t.Errorf("request %d (%d bytes): latency %.3f ms, broker %.3f ms", i, r.RequestBytes, r.LatencyMs, r.BrokerMs)
				}
			}
		})
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// TestTLSNotDecrypted: the same captures without the key log, or with
// another session's secrets, give no requests, one problem per
// connection with its reason, and no skipped (garbage) bytes.
func TestTLSNotDecrypted(t *testing.T) {
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		writes, keyLog := kafkaOverTLS(t, version, 3)
		_, otherLog := kafkaOverTLS(t, version, 1)
		// The other session's secrets under this session's client random.
		mine := strings.Fields(string(keyLog))[1]
		var wrong bytes.Buffer
		for _, line := range strings.Split(strings.TrimSpace(string(otherLog)), "\n") {
			f := strings.Fields(line)
			fmt.Fprintf(&wrong, "%s %s %s\n", f[0], mine, f[2])
		}
		wrongKeys := tlskeys.New()
		if err := wrongKeys.Read(&wrong, "wrong"); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name   string
			keys   tlsdecrypt.KeySource
			status string
		}{
			{"no key log", nil, "no-keys"},
			{"empty key log", tlskeys.New(), "no-keys"},
			{"wrong key", wrongKeys, "failed"},
		} {
			reqs, d := decodeWith(tlsSegments(writes), tc.keys)
			st, probs := d.Stats(), d.TLSProblems()
			if len(reqs) != 0 || st.TLSConnections != 1 || st.TLSUndecrypted() != 1 || st.SkippedBytes != 0 || st.TLSUndecryptedBytes == 0 ||
				len(probs) != 1 || probs[0].Status != tc.status || probs[0].Reason == "" || probs[0].Client != "127.0.0.2:40000" {
				t.Errorf("%s, %s: %d requests, stats %+v, problems %+v", tls.VersionName(version), tc.name, len(reqs), st, probs)
			}
		}
	}
}

// TestTLSCaptureStartsLate: a capture that begins after a connection's
// handshake cannot find its keys, and says so; nothing is decoded and no
// byte is counted as garbage.
func TestTLSCaptureStartsLate(t *testing.T) {
	writes, keyLog := kafkaOverTLS(t, tls.VersionTLS13, 4)
	keys := tlskeys.New()
	if err := keys.Read(bytes.NewReader(keyLog), "keylog"); err != nil {
		t.Fatal(err)
	}
	segs := tlsSegments(writes)
	// Without the SYNs and the first flights (ClientHello, the server's
	// flight and the client's Finished).
	reqs, d := decodeWith(segs[6:], keys)
	st, probs := d.Stats(), d.TLSProblems()
	if len(reqs) != 0 || st.TLSNoKeys != 1 || st.SkippedBytes != 0 || len(probs) != 1 || !strings.Contains(probs[0].Reason, "began after") {
		t.Errorf("%d requests, stats %+v, problems %+v", len(reqs), st, probs)
	}
}

// TestTLSGap: a segment lost mid-conversation costs the requests it
// touched, not the rest of the connection.
func TestTLSGap(t *testing.T) {
	const n = 12
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		writes, keyLog := kafkaOverTLS(t, version, n)
		keys := tlskeys.New()
		if err := keys.Read(bytes.NewReader(keyLog), "keylog"); err != nil {
			t.Fatal(err)
		}
		segs := tlsSegments(writes)
		lost := len(segs) / 2
		segs = append(segs[:lost:lost], segs[lost+1:]...)
		reqs, d := decodeWith(segs, keys)
		st := d.Stats()
		answered := 0
		for _, r := range reqs {
			if r.Answered && !r.Partial {
				answered++
			}
		}
		if st.TLSResyncs != 1 || st.TLSDecrypted != 1 || st.Gaps == 0 || answered < n-2 {
			t.Errorf("%s: %d of %d requests answered after a lost segment; stats %+v", tls.VersionName(version), answered, n, st)
		}
	}
}

// TestTLSBucketsDisjoint: each TLS connection is counted in exactly one
// kind, whatever became of it: one that decrypted and then met a record
// that did not (a damaged one) is "decrypted, then stopped", not both
// decrypted and failed; the kinds add up to the connections.
func TestTLSBucketsDisjoint(t *testing.T) {
	// A record whose tag cannot verify, after the conversation.
	bogus := append([]byte{23, 3, 3, 0, 32}, bytes.Repeat([]byte{0x5a}, 32)...)
	for _, version := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
		writes, keyLog := kafkaOverTLS(t, version, 3)
		keys := tlskeys.New()
		if err := keys.Read(bytes.NewReader(keyLog), "keylog"); err != nil {
			t.Fatal(err)
		}
		damaged := append(slices.Clone(writes), tlsWrite{fromClient: true, data: bogus})
		tests := []struct {
			name      string
			writes    []tlsWrite
			keys      tlsdecrypt.KeySource
			want      TLSBuckets
			decrypted bool // the problem says records decrypted first
		}{
			{"decrypted", writes, keys, TLSBuckets{Decrypted: 1}, false},
			{"decrypted, then a damaged record", damaged, keys, TLSBuckets{DecryptedThenStop: 1}, true},
			{"no secrets, a damaged record", damaged, tlskeys.New(), TLSBuckets{NoKeys: 1}, false},
			{"handshake only", writes[:1], keys, TLSBuckets{HandshakeOnly: 1}, false},
		}
		for _, tc := range tests {
			t.Run(tls.VersionName(version)+", "+tc.name, func(t *testing.T) {
				_, d := decodeWith(tlsSegments(tc.writes), tc.keys)
				st, probs := d.Stats(), d.TLSProblems()
				got := st.TLSBuckets()
				sum := got.Decrypted + got.DecryptedThenStop + got.HandshakeOnly + got.NoKeys + got.Failed + got.NotTLS + got.Lost + got.InProgress
				if got != tc.want || sum != st.TLSConnections || int64(len(probs)) != st.TLSStopped() {
					t.Errorf("buckets %+v (sum %d of %d connections), problems %+v; want %+v", got, sum, st.TLSConnections, probs, tc.want)
				}
				if len(probs) == 1 && probs[0].Decrypted != tc.decrypted {
					t.Errorf("problem %+v: decrypted first %v, want %v", probs[0], probs[0].Decrypted, tc.decrypted)
				}
			})
		}
	}
}
