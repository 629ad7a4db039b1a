package keylogagent

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/tlskeys"
)

// keystorePassword is the test keystore's (PKCS12 wants one).
const keystorePassword = "changeit"

// requireJava returns java and keytool, or skips (fails under CI=true).
// jcmd, which Attach runs, is checked too.
func requireJava(t *testing.T) (java, keytool string) {
	t.Helper()
	java, err := lab.JavaPath()
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	for _, tool := range []string{"keytool", "jcmd"} {
		p, err := hostinfo.JDKTool(tool)
		if err != nil {
			labtest.Unavailable(t, "%v", err)
		}
		if tool == "keytool" {
			keytool = p
		}
	}
	return java, keytool
}

// requireJar returns the agent jar, or skips (fails under CI=true).
func requireJar(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jar, err := EnsureJar(ctx)
	if err != nil {
		labtest.Unavailable(t, "%v", err)
	}
	return jar
}

// makeKeystore writes a self-signed EC certificate for 127.0.0.1 into
// dir/server.p12 (world-readable: the server may run as another user) and
// returns a pool that trusts it.
func makeKeystore(t *testing.T, keytool, dir string) (keystore string, roots *x509.CertPool) {
	t.Helper()
	keystore = filepath.Join(dir, "server.p12")
	pem := filepath.Join(dir, "server.pem")
	for _, args := range [][]string{
		{"-genkeypair", "-alias", "server", "-keyalg", "EC", "-groupname", "secp256r1", "-validity", "2",
			"-dname", "CN=kscope-test", "-ext", "SAN=ip:127.0.0.1", "-keystore", keystore, "-storetype", "PKCS12", "-storepass", keystorePassword},
		{"-exportcert", "-rfc", "-alias", "server", "-keystore", keystore, "-storepass", keystorePassword, "-file", pem},
	} {
		if out, err := exec.Command(keytool, args...).CombinedOutput(); err != nil {
			t.Fatalf("keytool %s: %v: %s", args[0], err, out)
		}
	}
	if err := os.Chmod(keystore, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(pem)
	if err != nil {
		t.Fatal(err)
	}
	roots = x509.NewCertPool()
	if !roots.AppendCertsFromPEM(b) {
		t.Fatalf("no certificate in %s", pem)
	}
	return keystore, roots
}

// server is testdata/Server.java running.
type server struct {
	pid    int
	addr   string
	mu     sync.Mutex
	stderr bytes.Buffer
}

func (s *server) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.Write(p)
}

// Stderr is what the JVM wrote to its stderr so far.
func (s *server) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// startServer runs testdata/Server.java from dir (a copy of it is put
// there) with keystore, as cred's user when cred is not nil, and waits for
// its port. It is stopped in t.Cleanup.
func startServer(t *testing.T, java, dir, keystore string, cred *syscall.Credential) *server {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("testdata", "Server.java"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "Server.java"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(java, "Server.java", keystore, keystorePassword)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	s := new(server)
	cmd.Stderr = s
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s Server.java: %v", java, err)
	}
	s.pid = cmd.Process.Pid
	t.Cleanup(func() {
		stdin.Close() // the server exits at the end of its input
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("Server.java (pid %d) stderr:\n%s", s.pid, s.Stderr())
		}
	})
	port := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if p, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				port <- p
			}
		}
		io.Copy(io.Discard, stdout)
	}()
	select {
	case p := <-port:
		s.addr = "127.0.0.1:" + p
	case <-time.After(20 * time.Second):
		t.Fatalf("Server.java (pid %d) did not listen within 20 s: %s", s.pid, s.Stderr())
	}
	return s
}

// conn is a Go TLS client connection with the secrets Go logged for it.
type conn struct {
	*tls.Conn
	random tlskeys.ClientRandom
	keys   tlskeys.Session // as Go's KeyLogWriter wrote them
	// sessionID is the ServerHello's (TLS 1.2: what the agent's
	// "RSA Session-ID:" lines are keyed by).
	sessionID []byte
	rd        *bufio.Reader
}

// dial connects to addr with TLS version pinned (MaxVersion, MinVersion),
// trusting roots, and checks one echoed line. With a session cache it
// resumes a session from there when it can; a resumed TLS 1.2 session
// has no keys in Go's key log (they are the earlier session's).
func dial(t *testing.T, addr string, version uint16, roots *x509.CertPool, cache tls.ClientSessionCache) *conn {
	t.Helper()
	var keylog bytes.Buffer
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	first := &firstBytes{Conn: raw}
	c := tls.Client(first, &tls.Config{
		ServerName:   "127.0.0.1",
		RootCAs:      roots,
		MinVersion:   version,
		MaxVersion:   version,
		KeyLogWriter: &keylog,
		// nil: no resumption.
		ClientSessionCache: cache,
	})
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	if got := c.ConnectionState().Version; got != version {
		t.Fatalf("negotiated %s, want %s", tls.VersionName(got), tls.VersionName(version))
	}
	cc := &conn{Conn: c, rd: bufio.NewReader(c)}
	if cc.sessionID, err = serverHelloSessionID(first.bytes()); err != nil {
		t.Fatalf("the server's first bytes: %v", err)
	}
	// "LABEL CLIENT_RANDOM SECRET" lines, one client random.
	f := strings.Fields(keylog.String())
	if len(f) == 0 && c.ConnectionState().DidResume && version == tls.VersionTLS12 {
		cc.echo(t)
		return cc
	}
	if len(f) < 3 {
		t.Fatalf("Go logged no key for the connection")
	}
	if _, err := hex.Decode(cc.random[:], []byte(f[1])); err != nil {
		t.Fatalf("Go's key log: %v", err)
	}
	keys := tlskeys.New()
	if err := keys.Read(&keylog, "go"); err != nil {
		t.Fatal(err)
	}
	var ok bool
	if cc.keys, ok = keys.Lookup(cc.random); !ok {
		t.Fatalf("tlskeys did not read Go's own key log")
	}
	cc.echo(t)
	return cc
}

// echo sends a line and reads it back.
func (c *conn) echo(t *testing.T) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	msg := fmt.Sprintf("hello %x", c.random[:4])
	if _, err := fmt.Fprintln(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	got, err := c.rd.ReadString('\n')
	if err != nil || strings.TrimSpace(got) != msg {
		t.Fatalf("echo: got %q, %v; want %q", got, err, msg)
	}
}

// firstBytes keeps the first 4 KiB read from a connection.
type firstBytes struct {
	net.Conn
	mu  sync.Mutex
	buf []byte
}

func (c *firstBytes) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.mu.Lock()
	if len(c.buf) < 4096 {
		c.buf = append(c.buf, p[:n]...)
	}
	c.mu.Unlock()
	return n, err
}

func (c *firstBytes) bytes() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf
}

// serverHelloSessionID returns the session id of the ServerHello that a
// server's first TLS record starts with: record header (5 bytes),
// handshake header (type 2, 3-byte length), legacy version (2), random
// (32), session id length (1) and id.
func serverHelloSessionID(b []byte) ([]byte, error) {
	const at = 5 + 4 + 2 + 32
	if len(b) < at+1 || b[0] != 22 || b[5] != 2 {
		return nil, fmt.Errorf("no ServerHello at the start (% x)", b[:min(len(b), 6)])
	}
	n := int(b[at])
	if n > 32 || len(b) < at+1+n {
		return nil, fmt.Errorf("ServerHello session id of %d bytes", n)
	}
	return b[at+1 : at+1+n], nil
}
