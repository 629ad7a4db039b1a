package tlsdecrypt

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/labtest"
)

// serverTap logs what a server reads and writes, as the capture would see
// it.
type serverTap struct {
	net.Conn
	mu     *sync.Mutex
	chunks *[]chunk
}

func (t serverTap) Read(b []byte) (int, error) {
	n, err := t.Conn.Read(b)
	t.mu.Lock()
	*t.chunks = append(*t.chunks, chunk{ClientToServer, bytes.Clone(b[:n])})
	t.mu.Unlock()
	return n, err
}

func (t serverTap) Write(b []byte) (int, error) {
	t.mu.Lock()
	*t.chunks = append(*t.chunks, chunk{ServerToClient, bytes.Clone(b)})
	t.mu.Unlock()
	return t.Conn.Write(b)
}

// TestKeyUpdate: OpenSSL's s_client (a client this project did not write)
// sends a TLS 1.3 KeyUpdate asking for one back ("K"), in the middle of a
// conversation with Go's server; with s_client's own key log (only the
// first traffic secrets: the updated ones are derived) both directions
// decrypt to the end.
func TestKeyUpdate(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		labtest.Unavailable(t, "openssl not found")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var mu sync.Mutex
	var chunks []chunk
	var echoed bytes.Buffer
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		s := tls.Server(serverTap{c, &mu, &chunks}, &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, MinVersion: tls.VersionTLS13})
		defer s.Close()
		r := bufio.NewReader(s)
		for range 2 {
			line, err := r.ReadBytes('\n')
			if err != nil {
				done <- err
				return
			}
			echoed.Write(line)
			if _, err := s.Write(line); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	keyLog := filepath.Join(t.TempDir(), "keys.log")
	cmd := exec.Command(openssl, "s_client", "-connect", ln.Addr().String(), "-tls1_3", "-keylogfile", keyLog)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"hello\n", "K\n", "world\n"} {
		time.Sleep(300 * time.Millisecond)
		io.WriteString(stdin, line)
	}
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		err = io.ErrNoProgress
	}
	time.Sleep(200 * time.Millisecond)
	stdin.Close()
	cmd.Wait()
	if err != nil {
		t.Fatalf("server: %v; s_client: %s", err, out.String())
	}
	if !bytes.Contains(out.Bytes(), []byte("KEYUPDATE")) {
		t.Fatalf("s_client sent no KeyUpdate: %s", out.String())
	}
	log, err := os.ReadFile(keyLog)
	if err != nil {
		t.Fatal(err)
	}
	c := New(keysOf(t, log))
	var got [2][]byte
	mu.Lock()
	defer mu.Unlock()
	for _, ch := range chunks {
		if err := c.Feed(ch.dir, ch.data, func(dir Direction, p []byte, _ Record) { got[dir] = append(got[dir], p...) }); err != nil {
			t.Fatal(err)
		}
	}
	want := []byte("hello\nworld\n")
	if !bytes.Equal(got[ClientToServer], want) || !bytes.Equal(got[ServerToClient], want) || !bytes.Equal(echoed.Bytes(), want) {
		t.Errorf("decrypted %q and %q, want %q both ways (the server read %q)", got[0], got[1], want, echoed.Bytes())
	}
}
