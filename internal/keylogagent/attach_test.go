package keylogagent

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/tlskeys"
)

// nobody is the uid and gid the second test JVM runs as.
const nobody = 65534

var versions = []struct {
	name    string
	version uint16
}{
	{"TLS1.3", tls.VersionTLS13},
	{"TLS1.2", tls.VersionTLS12},
}

// TestAttach attaches to a real JVM serving TLS, running as this user and
// as another one (nobody: the key log must be given to it, and the jar,
// in root's home, copied where it can read it), and checks that the key
// log then has the secrets of new TLS 1.3 and 1.2 connections, and not
// those of connections made before; that a second Attach with the same
// key log does nothing, and one with another fails.
func TestAttach(t *testing.T) {
	java, keytool := requireJava(t)
	jar := requireJar(t)
	shared := t.TempDir()
	keystore, roots := makeKeystore(t, keytool, shared)

	for _, tc := range []struct {
		name string
		cred *syscall.Credential
	}{
		{"same-user", nil},
		{"nobody", &syscall.Credential{Uid: nobody, Gid: nobody}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.cred != nil {
				labtest.RequireRoot(t)
			}
			dir := t.TempDir()
			// Let another user reach the server's and the key log's dir.
			for _, d := range []string{shared, filepath.Dir(shared), dir, filepath.Dir(dir)} {
				if err := os.Chmod(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			srv := startServer(t, java, dir, keystore, tc.cred)
			testAttach(t, srv, dir, jar, roots, tc.cred)
		})
	}
}

func testAttach(t *testing.T, srv *server, dir, jar string, roots *x509.CertPool, cred *syscall.Credential) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keylog := filepath.Join(dir, "keys.log")

	// Connections made before the attach, whose sessions are cached for
	// resumption.
	before := make(map[uint16]*conn)
	caches := make(map[uint16]tls.ClientSessionCache)
	for _, v := range versions {
		caches[v.version] = tls.NewLRUClientSessionCache(4)
		before[v.version] = dial(t, srv.addr, v.version, roots, caches[v.version])
	}

	start := time.Now()
	if err := Attach(ctx, srv.pid, keylog); err != nil {
		t.Fatal(err)
	}
	t.Logf("Attach took %v", time.Since(start).Round(time.Millisecond))

	st, err := os.Stat(keylog)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("key log mode %v, want 0600", st.Mode().Perm())
	}
	wantUID := uint32(os.Geteuid())
	if cred != nil {
		wantUID = cred.Uid
	}
	if uid, _, _ := owner(st); uid != wantUID {
		t.Errorf("key log owned by uid %d, want the JVM's %d", uid, wantUID)
	}
	// The jar is copied next to the key log only for a JVM that cannot
	// read it where it is (nobody cannot enter root's home).
	copied := filepath.Join(dir, filepath.Base(jar))
	_, err = os.Stat(copied)
	if readable := cred == nil || !strings.HasPrefix(jar, "/root/"); readable != errors.Is(err, os.ErrNotExist) {
		t.Errorf("jar copy %s: %v (the JVM can read %s: %v)", copied, err, jar, readable)
	}

	// What the JVM printed, on its stderr.
	want := "Logging to " + keylog + "."
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(srv.Stderr(), want) && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(srv.Stderr(), "Successfully attached agent") || !strings.Contains(srv.Stderr(), want) {
		t.Errorf("the JVM's stderr has no \"Successfully attached agent ... %s\"", want)
	}

	for _, v := range versions {
		t.Run(v.name, func(t *testing.T) {
			c := dial(t, srv.addr, v.version, roots, nil)
			b, k := waitKeyLog(t, keylog, c)
			if !logged(c, k) {
				t.Fatalf("after 5 s the key log has no secrets of the new %s connection (client random %x); tlskeys: %+v", v.name, c.random, k.Stats())
			}
			if _, ok := k.Lookup(c.random); !ok {
				t.Logf("%s: found by the ServerHello's session id (\"RSA Session-ID:... Master-Key:...\"), not by the client random", v.name)
			}
			if st := k.Stats(); st.Malformed != 0 || st.UnknownLabels != 0 {
				t.Errorf("tlskeys skipped lines of the agent's key log (the marker is a comment): %+v", st)
			}
			pre := before[v.version]
			pre.echo(t) // still open, and not handshaken again
			if mentions(pre, b) {
				t.Errorf("the key log has secrets of the %s connection made before the attach", v.name)
			}

			// A session from before the attach, resumed: TLS 1.3
			// derives new secrets, which are logged; TLS 1.2 reuses
			// the old master secret, which is not (docs/tls.md).
			r := dial(t, srv.addr, v.version, roots, caches[v.version])
			if !r.ConnectionState().DidResume {
				t.Fatalf("the %s session from before the attach was not resumed", v.name)
			}
			switch v.version {
			case tls.VersionTLS13:
				if _, k := waitKeyLog(t, keylog, r); !logged(r, k) {
					t.Errorf("no secrets of a resumed TLS 1.3 connection")
				}
			case tls.VersionTLS12:
				// The agent writes during the server's handshake, which
				// ended before the echo: no need to wait.
				b, k := readKeyLog(t, keylog)
				if _, ok := k.LookupSessionID(r.sessionID); ok || mentions(pre, b) {
					t.Errorf("a resumed TLS 1.2 session from before the attach is in the key log: update docs/tls.md and the package doc")
				}
			}
		})
	}

	t.Run("again", func(t *testing.T) {
		if err := Attach(ctx, srv.pid, keylog); err != nil {
			t.Fatalf("second Attach, same key log: %v", err)
		}
		c := dial(t, srv.addr, tls.VersionTLS13, roots, nil)
		b, k := waitKeyLog(t, keylog, c)
		if !logged(c, k) {
			t.Fatalf("after 5 s the key log has no secrets of a connection after the second Attach")
		}
		random := strings.ToUpper(hex.EncodeToString(c.random[:]))
		lines, distinct := 0, make(map[string]bool)
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, random) {
				lines++
				distinct[l] = true
			}
		}
		if lines != len(distinct) {
			t.Errorf("%d key log lines for one connection, %d distinct: the agent was loaded twice", lines, len(distinct))
		}
		if n := strings.Count(string(b), "# kscope keylogagent:"); n != 1 {
			t.Errorf("%d marker lines, want 1", n)
		}
	})

	t.Run("other-keylog", func(t *testing.T) {
		other := filepath.Join(dir, "other.log")
		err := Attach(ctx, srv.pid, other)
		if !errors.Is(err, ErrAlreadyLoaded) {
			t.Fatalf("Attach with another key log: %v, want ErrAlreadyLoaded", err)
		}
		t.Logf("Attach with another key log: %v", err)
		if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the failed Attach left %s behind (%v)", other, err)
		}
	})
}

// waitKeyLog reads the key log at path until c's secrets are in it (for
// up to 5 s); it returns the last read's contents and keys.
func waitKeyLog(t *testing.T, path string, c *conn) ([]byte, *tlskeys.Keys) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, k := readKeyLog(t, path)
		if logged(c, k) || time.Now().After(deadline) {
			return b, k
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readKeyLog reads the key log at path, raw and with tlskeys.
func readKeyLog(t *testing.T, path string) ([]byte, *tlskeys.Keys) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	k := tlskeys.New()
	if err := k.Read(bytes.NewReader(b), path); err != nil {
		t.Fatal(err)
	}
	return b, k
}

// logged reports whether the agent's key log, as tlskeys reads it, has
// the secrets of c, equal to Go's: for TLS 1.3 the four traffic secrets
// under c's client random; for TLS 1.2 the master secret under the
// client random, or under the ServerHello's session id (the "RSA
// Session-ID:... Master-Key:..." lines extract-tls-secrets 4.0.0 writes
// for TLS 1.2 on JDK 11 and later).
func logged(c *conn, k *tlskeys.Keys) bool {
	s, ok := k.Lookup(c.random)
	if c.ConnectionState().Version == tls.VersionTLS13 {
		return ok && bytes.Equal(s.ClientHandshake, c.keys.ClientHandshake) &&
			bytes.Equal(s.ServerHandshake, c.keys.ServerHandshake) &&
			bytes.Equal(s.ClientTraffic, c.keys.ClientTraffic) &&
			bytes.Equal(s.ServerTraffic, c.keys.ServerTraffic)
	}
	if ok && bytes.Equal(s.Master, c.keys.Master) {
		return true
	}
	m, ok := k.LookupSessionID(c.sessionID)
	return ok && bytes.Equal(m, c.keys.Master)
}

// mentions reports whether the key log has anything of c: its client
// random or any of its secrets.
func mentions(c *conn, b []byte) bool {
	b = bytes.ToUpper(b)
	for _, s := range [][]byte{c.random[:], c.keys.Master, c.keys.ClientHandshake, c.keys.ServerHandshake, c.keys.ClientTraffic, c.keys.ServerTraffic} {
		if len(s) > 0 && bytes.Contains(b, []byte(strings.ToUpper(hex.EncodeToString(s)))) {
			return true
		}
	}
	return false
}
