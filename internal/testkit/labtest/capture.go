package labtest

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kscope-dev/kscope/internal/lab"
)

// Tool finds a system tool on PATH or in the sbin dirs a non-login shell
// may lack; "" when it is not installed.
func Tool(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, d := range []string{"/usr/sbin", "/sbin", "/usr/bin", "/bin"} {
		if st, err := os.Stat(filepath.Join(d, name)); err == nil && !st.IsDir() {
			return filepath.Join(d, name)
		}
	}
	return ""
}

// Capture runs `tcpdump -i IFACE -s 0 -w PATH -U --immediate-mode -B 262144 -Z root
// "tcp port N"` and returns once tcpdump is listening. The returned stop
// sends SIGINT and waits, so PATH is a complete pcap when it returns; it is
// idempotent and also runs in t.Cleanup. Missing tcpdump or root skips
// (fails under CI=true).
func Capture(t testing.TB, iface string, port int, path string) (stop func()) {
	t.Helper()
	bin := Tool("tcpdump")
	if bin == "" {
		Unavailable(t, "tcpdump not found")
	}
	RequireRoot(t)

	cmd := exec.Command(bin,
		"-i", iface, "-s", "0", "-w", path,
		"-U", // write each packet as it arrives
		// With TPACKET_V3 libpcap otherwise hands packets over in blocks,
		// and on SIGINT tcpdump exits without the pending block: the tail
		// of the capture would be lost.
		"--immediate-mode",
		// A 256 MiB kernel buffer: with the default 2 MiB a consumer's
		// fetch burst of 64 KiB loopback segments is dropped.
		"-B", "262144",
		// Debian's tcpdump otherwise drops to user tcpdump after opening
		// the device; staying root keeps PATH writable in any test dir.
		"-Z", "root",
		fmt.Sprintf("tcp port %d", port))
	// A pipe as *os.File: tcpdump writes straight into it and the reader
	// below sees EOF when tcpdump exits, with no os/exec copying involved.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatalf("labtest: tcpdump: %v", err)
	}
	cmd.Stderr = pw
	exited, err := lab.StartChild(cmd) // never outlives the test binary
	pw.Close()
	if err != nil {
		pr.Close()
		t.Fatalf("labtest: %v", err)
	}

	// tcpdump prints "listening on IFACE, ..." once the filter is set;
	// packets from then on are captured.
	w := watchStderr(pr, "listening on")
	listening, readDone, output := w.seen, w.done, w.output
	var once sync.Once
	stop = func() {
		once.Do(func() {
			// Packets just sent may still be on their way through the
			// kernel to tcpdump; give them a moment before stopping.
			time.Sleep(200 * time.Millisecond)
			_ = cmd.Process.Signal(syscall.SIGINT)
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("labtest: tcpdump %s: %v: %s", path, err, output())
				}
				<-readDone
				// tcpdump's own account of what it missed, so that a
				// test can tell capture loss from decoder loss.
				for _, line := range strings.Split(output(), "\n") {
					if strings.Contains(line, "dropped") || strings.Contains(line, "captured") || strings.Contains(line, "received") {
						t.Logf("labtest: tcpdump %s: %s", path, line)
					}
				}
			case <-time.After(10 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Errorf("labtest: tcpdump %s did not exit on SIGINT; killed (capture may be truncated)", path)
			}
			<-readDone
		})
	}
	t.Cleanup(stop)

	select {
	case <-listening:
	case <-readDone: // stderr closed: tcpdump exited
		stop()
		t.Fatalf("labtest: tcpdump exited before listening: %s", output())
	case <-time.After(10 * time.Second):
		stop()
		t.Fatalf("labtest: tcpdump not listening after 10s: %s", output())
	}
	return stop
}

// stderrWatch reads a child's stderr to its end, keeping the text, and
// closes seen at the first line holding a marker, done at EOF.
type stderrWatch struct {
	seen, done chan struct{}
	mu         sync.Mutex
	text       strings.Builder
}

// watchStderr starts reading r (closed at EOF) for marker.
func watchStderr(r io.ReadCloser, marker string) *stderrWatch {
	w := &stderrWatch{seen: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer r.Close()
		sc := bufio.NewScanner(r)
		seen := false
		for sc.Scan() {
			w.mu.Lock()
			w.text.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if !seen && strings.Contains(sc.Text(), marker) {
				seen = true
				close(w.seen)
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	return w
}

// output is what was read so far, trimmed.
func (w *stderrWatch) output() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.TrimSpace(w.text.String())
}
