package tlskeys

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

// realKeyLog runs TLS handshakes of the given versions between Go's own
// client and server (crypto/tls, over loopback) and returns the key log
// the client wrote (tls.Config.KeyLogWriter: the NSS format).
func realKeyLog(t *testing.T, versions ...uint16) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kscope-test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	var log bytes.Buffer
	for _, v := range versions {
		c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{InsecureSkipVerify: true, MinVersion: v, MaxVersion: v, KeyLogWriter: &log})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	return log.Bytes()
}

func TestReadRealKeyLog(t *testing.T) {
	log := realKeyLog(t, tls.VersionTLS13, tls.VersionTLS12, tls.VersionTLS13)
	k := New()
	if err := k.Read(bytes.NewReader(log), "keylog"); err != nil {
		t.Fatal(err)
	}
	st := k.Stats()
	// TLS 1.3: four traffic secrets per session (Go logs no exporter
	// secret); TLS 1.2: the master secret.
	if st.Sessions != 3 || st.Secrets != 9 || st.Malformed != 0 || st.UnknownLabels != 0 {
		t.Fatalf("stats %+v, want 3 sessions, 9 secrets", st)
	}
	tls12, tls13 := 0, 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(log)), "\n") {
		f := strings.Fields(line)
		s, ok := k.Lookup(randomOf(t, f[1]))
		if !ok {
			t.Fatalf("session of %s not found", f[0])
		}
		switch {
		case s.Master != nil:
			tls12++
			if len(s.Master) != 48 || s.ClientTraffic != nil {
				t.Errorf("TLS 1.2 session: %+v", s)
			}
		case s.ClientTraffic != nil && s.ServerTraffic != nil && s.ClientHandshake != nil && s.ServerHandshake != nil:
			tls13++
		default:
			t.Errorf("session with missing secrets: %+v", s)
		}
	}
	if tls12 != 1 || tls13 != 8 { // lines: 1 for TLS 1.2, 4 each for two TLS 1.3 sessions
		t.Errorf("lines of TLS 1.2 sessions %d, TLS 1.3 %d; want 1 and 8", tls12, tls13)
	}
}

// TestSecretsNeverPrinted: neither a secret nor a session prints key
// bytes, whichever verb formats it.
func TestSecretsNeverPrinted(t *testing.T) {
	log := realKeyLog(t, tls.VersionTLS13)
	k := New()
	if err := k.Read(bytes.NewReader(log), "keylog"); err != nil {
		t.Fatal(err)
	}
	line := strings.Fields(strings.SplitN(string(log), "\n", 2)[0])
	s, ok := k.Lookup(randomOf(t, line[1]))
	if !ok || s.ClientTraffic == nil {
		t.Fatalf("no session for %s", line[1])
	}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		out := fmt.Sprintf(verb, s)
		for _, secret := range []Secret{s.ClientHandshake, s.ServerHandshake, s.ClientTraffic, s.ServerTraffic} {
			if strings.Contains(out, fmt.Sprintf("%x", []byte(secret))) || bytes.Contains([]byte(out), secret) {
				t.Errorf("%s of a session prints a secret: %s", verb, out)
			}
		}
	}
}

func randomOf(t *testing.T, h string) ClientRandom {
	t.Helper()
	var cr ClientRandom
	if b, err := hex.DecodeString(h); err != nil || copy(cr[:], b) != len(cr) {
		t.Fatalf("client random %q: %v", h, err)
	}
	return cr
}

func TestReadHostile(t *testing.T) {
	cr := strings.Repeat("ab", 32)
	good := "CLIENT_RANDOM " + cr + " " + strings.Repeat("cd", 48)
	tests := []struct {
		name                        string
		in                          string
		secrets, malformed, unknown int
		conflicts                   int
		first                       string
	}{
		{"comments and blanks", "# a comment\n\n" + good + "\n", 1, 0, 0, 0, ""},
		{"no newline at the end", good, 1, 0, 0, 0, ""},
		{"CRLF", good + "\r\n", 1, 0, 0, 0, ""},
		{"short random", "CLIENT_RANDOM abcd " + strings.Repeat("cd", 48), 0, 1, 0, 0, "k:1"},
		{"master secret of 32 bytes", "CLIENT_RANDOM " + cr + " " + strings.Repeat("cd", 32), 0, 1, 0, 0, "k:1"},
		{"bad hex", "CLIENT_TRAFFIC_SECRET_0 " + cr + " " + strings.Repeat("zz", 32), 0, 1, 0, 0, "k:1"},
		{"two fields", "CLIENT_RANDOM " + cr, 0, 1, 0, 0, "k:1"},
		{"unknown label", "SOMETHING_NEW " + cr + " " + strings.Repeat("cd", 32), 0, 0, 1, 0, ""},
		{"overlong line", strings.Repeat("x", 100_000) + "\n" + good + "\n", 1, 1, 0, 0, "k:1"},
		{"conflict keeps the first", good + "\nCLIENT_RANDOM " + cr + " " + strings.Repeat("ef", 48) + "\n" + good, 1, 0, 0, 1, ""},
		{"second bad line is the first reported", good + "\nCLIENT_RANDOM zz zz\n", 1, 1, 0, 0, "k:2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := New()
			if err := k.Read(strings.NewReader(tt.in), "k"); err != nil {
				t.Fatal(err)
			}
			st := k.Stats()
			if st.Secrets != tt.secrets || st.Malformed != tt.malformed || st.UnknownLabels != tt.unknown || st.Conflicts != tt.conflicts || st.FirstMalformed != tt.first {
				t.Errorf("stats %+v, want secrets %d malformed %d (first %q) unknown %d conflicts %d", st, tt.secrets, tt.malformed, tt.first, tt.unknown, tt.conflicts)
			}
		})
	}
}

// TestReadError: a reader that fails is an error naming the source and line.
func TestReadError(t *testing.T) {
	r := io.MultiReader(strings.NewReader("# one\n# two\n"), errReader{})
	err := New().Read(r, "keys.log")
	if err == nil || !strings.Contains(err.Error(), "keys.log (line 2)") {
		t.Errorf("error %v", err)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, net.ErrClosed }

// TestConflictNamesWhatWasKept: two different secrets for a session's
// label, whether from one source or two, are counted for the source of
// the second, and the keys say where both came from and that the first
// was kept; the same secret twice is a duplicate, not a conflict.
func TestConflictNamesWhatWasKept(t *testing.T) {
	cr := strings.Repeat("ab", 32)
	line := func(label, secret string) string { return label + " " + cr + " " + secret + "\n" }
	master := func(b string) string { return line(LabelClientRandom, strings.Repeat(b, 48)) }
	sid := func(b string) string { return "RSA Session-ID:0102 Master-Key:" + strings.Repeat(b, 48) + "\n" }
	tests := []struct {
		name                 string
		first, second        string
		secondConflicts, dup int
		firstConflict        string
	}{
		{"same secret in both", master("cd"), master("cd"), 0, 1, ""},
		{"different master secrets", master("cd"), master("ef"),
			1, 0, "CLIENT_RANDOM at keys.log:2 differs from the one at capture.pcapng secrets block at byte 28:1, which was kept"},
		{"different traffic secrets", line(LabelServerApplicationTraffic, strings.Repeat("01", 32)), "# x\n" + line(LabelServerApplicationTraffic, strings.Repeat("02", 32)),
			1, 0, "SERVER_TRAFFIC_SECRET_0 at keys.log:3 differs from the one at capture.pcapng secrets block at byte 28:1, which was kept"},
		{"different session-id secrets", sid("cd"), sid("ef"),
			1, 0, "RSA Session-ID at keys.log:2 differs from the one at capture.pcapng secrets block at byte 28:1, which was kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := New()
			first, err := k.Load(strings.NewReader(tt.first), "capture.pcapng secrets block at byte 28")
			if err != nil {
				t.Fatal(err)
			}
			// The second source's line after a blank one: its true line.
			second, err := k.Load(strings.NewReader("\n"+tt.second), "keys.log")
			if err != nil {
				t.Fatal(err)
			}
			all := k.Stats()
			if first.Secrets != 1 || first.Sessions != 1 || second.Conflicts != tt.secondConflicts || second.Duplicates != tt.dup || second.Secrets != 0 ||
				all.Conflicts != tt.secondConflicts || all.FirstConflict != tt.firstConflict || second.FirstConflict != tt.firstConflict {
				t.Errorf("first %+v\nsecond %+v\nall %+v\nwant %d conflicts (%q), %d duplicates", first, second, all, tt.secondConflicts, tt.firstConflict, tt.dup)
			}
		})
	}
}

// FuzzKeyLog: any bytes read as a key log are counted line by line,
// every line in exactly one kind, and a key log followed as it grows
// (Tail, fed in two pieces) reads its whole lines as Read does.
func FuzzKeyLog(f *testing.F) {
	cr := strings.Repeat("ab", 32)
	f.Add([]byte("CLIENT_RANDOM "+cr+" "+strings.Repeat("cd", 48)+"\n"), 3)
	f.Add([]byte("SERVER_TRAFFIC_SECRET_0 "+cr+" "+strings.Repeat("cd", 32)+"\r\n# x\n"), 40)
	f.Add([]byte("\x00\xff CLIENT_RANDOM  \n\n"), 0)
	f.Add([]byte("RSA Session-ID:0102 Master-Key:"+strings.Repeat("cd", 48)+"\nRSA Session-ID:0102 Master-Key:"+strings.Repeat("ef", 48)+"\n"), 50)
	f.Add([]byte(strings.Repeat("x", MaxLineBytes)+"\n"+strings.Repeat("y", MaxLineBytes+1)+"\n"), MaxLineBytes)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		k := New()
		own, err := k.Load(bytes.NewReader(data), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		st := k.Stats()
		kinds := st.Blank + st.Secrets + st.Duplicates + st.Conflicts + st.UnknownLabels + st.Malformed
		if st.Secrets < st.Sessions || st.Lines != kinds || st.Lines > bytes.Count(data, []byte("\n"))+1 || own != st ||
			(st.Conflicts > 0) != (st.FirstConflict != "") || (st.Malformed > 0) != (st.FirstMalformed != "") {
			t.Fatalf("stats %+v, of the load %+v", st, own)
		}
		// Tail reads whole lines only: compare with Read of those.
		whole := data[:bytes.LastIndexByte(data, '\n')+1]
		split = min(max(split, 0), len(whole))
		want, err := New().Load(bytes.NewReader(whole), "fuzz")
		if err != nil {
			t.Fatal(err)
		}
		tk := New()
		var got Stats
		tail := &Tail{}
		add := func(line []byte, n int) {
			if line == nil {
				got.add(tk.overlong("fuzz", n), "fuzz", n)
				return
			}
			got.add(tk.add(line, "fuzz", n), "fuzz", n)
		}
		tail.lines(whole[:split], add)
		tail.lines(whole[split:], add)
		if got != want {
			t.Fatalf("followed in two pieces at %d: %+v; read whole: %+v", split, got, want)
		}
	})
}
