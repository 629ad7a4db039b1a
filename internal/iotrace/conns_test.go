package iotrace

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
)

func TestSockAddr(t *testing.T) {
	v4 := func(a, b, c, d byte) (x [16]byte) { x[0], x[1], x[2], x[3] = a, b, c, d; return }
	v6 := func(s string) (x [16]byte) { copy(x[:], net.ParseIP(s).To16()); return }
	tests := []struct {
		name   string
		family uint16
		addr   [16]byte
		port   uint16
		want   string
		ok     bool
	}{
		{"ipv4", afInet, v4(127, 0, 0, 1), 9092, "127.0.0.1:9092", true},
		{"ipv4 any", afInet, v4(0, 0, 0, 0), 1, "0.0.0.0:1", true},
		{"ipv4 high port", afInet, v4(10, 1, 2, 3), 65535, "10.1.2.3:65535", true},
		{"ipv6 loopback", afInet6, v6("::1"), 9092, "[::1]:9092", true},
		{"ipv6", afInet6, v6("2001:db8::17:1"), 40000, "[2001:db8::17:1]:40000", true},
		{"ipv6 link-local", afInet6, v6("fe80::a00:27ff:fe4e:66a1"), 9093, "[fe80::a00:27ff:fe4e:66a1]:9093", true},
		{"v4-mapped", afInet6, v6("::ffff:127.0.0.1"), 9092, "127.0.0.1:9092", true},
		{"v4-mapped client", afInet6, v6("::ffff:192.168.1.20"), 51234, "192.168.1.20:51234", true},
		// Not v4-mapped: v4-compatible (deprecated) stays IPv6.
		{"v4-compatible", afInet6, v6("::192.168.1.20"), 1, "[::c0a8:114]:1", true},
		{"unix", 1, [16]byte{}, 0, "", false},
		{"zero family", 0, [16]byte{}, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sockAddr(tt.family, tt.addr, tt.port)
			if (err == nil) != tt.ok || got != tt.want {
				t.Errorf("sockAddr(%d, %v, %d) = %q, %v; want %q (ok %v)", tt.family, tt.addr, tt.port, got, err, tt.want, tt.ok)
			}
		})
	}
}

// sockSample lays out a struct iosock_event.
func sockSample(ts, cookie uint64, tid uint32, family, lport, rport uint16, laddr, raddr [16]byte) []byte {
	b := make([]byte, sockEventSize)
	le := binary.LittleEndian
	le.PutUint64(b[0:], ts)
	le.PutUint64(b[8:], cookie)
	le.PutUint32(b[16:], tid)
	le.PutUint16(b[20:], family)
	le.PutUint16(b[22:], lport)
	le.PutUint16(b[24:], rport)
	copy(b[32:], laddr[:])
	copy(b[48:], raddr[:])
	return b
}

func TestDecodeSockEvent(t *testing.T) {
	var l4, r4, l6, r6 [16]byte
	copy(l4[:], []byte{127, 0, 0, 1})
	copy(r4[:], []byte{10, 0, 0, 7})
	copy(l6[:], net.ParseIP("::ffff:127.0.0.1"))
	copy(r6[:], net.ParseIP("::1"))
	v4 := sockSample(2_000_000_000, 99, 4242, afInet, 9092, 50000, l4, r4)
	v6 := sockSample(2_000_000_000, 99, 4242, afInet6, 9093, 50001, l6, r6)
	bad := sockSample(1, 1, 1, 1, 9092, 1, l4, r4)
	tests := []struct {
		name           string
		in             []byte
		decodeOK       bool
		client, broker string
	}{
		{"ipv4", v4, true, "10.0.0.7:50000", "127.0.0.1:9092"},
		{"ipv6, v4-mapped broker", v6, true, "[::1]:50001", "127.0.0.1:9093"},
		{"padded", append(slices.Clone(v4), 0, 0, 0, 0, 0, 0, 0, 0), true, "10.0.0.7:50000", "127.0.0.1:9092"},
		{"unknown family", bad, true, "", ""},
		{"short by one", v4[:sockEventSize-1], false, "", ""},
		{"odd", v4[:7], false, "", ""},
		{"empty", nil, false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := decodeSockEvent(tt.in)
			if (err == nil) != tt.decodeOK {
				t.Fatalf("err = %v, want ok %v", err, tt.decodeOK)
			}
			if err != nil {
				return
			}
			clock := clockOffset{realMinusMono: int64(time.Hour)}
			ct, err := connThread(&ev, clock, func(tid int) string { return "t" + strconv.Itoa(tid) })
			if tt.client == "" {
				if err == nil {
					t.Errorf("family %d accepted: %+v", ev.Family, *ct)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := event.ConnThread{Kind: event.KindConnThread, Time: time.Unix(3602, 0).UTC(), TID: 4242, Thread: "t4242",
				Client: tt.client, Broker: tt.broker}
			if *ct != want {
				t.Errorf("got  %+v\nwant %+v", *ct, want)
			}
		})
	}
}

const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2384 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1001 1 0000000000000000 100 0 0 10 0
   1: 00000000:2385 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1002 1 0000000000000000 100 0 0 10 0
   2: 0100007F:2384 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 1003 1 0000000000000000 20 4 30 10 -1
   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2000 1 0000000000000000 100 0 0 10 0
   4: 00000000000000000000000000000000:2386 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000 0 0 1004 1
   5: garbage
   6: 00000000:ZZZZ 00000000:0000 0A 0 0 0 0 0 1005 1
`

func TestListening(t *testing.T) {
	tests := []struct {
		name   string
		inodes []string
		want   []uint16
	}{
		{"own listeners", []string{"1001", "1002", "1003", "1004", "1005"}, []uint16{9092, 9093, 9094}},
		{"another process's", []string{"2000"}, []uint16{22}},
		{"none", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inodes := map[string]bool{}
			for _, i := range tt.inodes {
				inodes[i] = true
			}
			got := listening(bufio.NewScanner(strings.NewReader(procNetTCP)), inodes)
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func FuzzListening(f *testing.F) {
	f.Add(procNetTCP, "1001")
	f.Add("0: 0:0 0:0 0A 0 0 0 0 0 1 1", "1")
	f.Fuzz(func(t *testing.T, table, inode string) {
		for _, p := range listening(bufio.NewScanner(strings.NewReader(table)), map[string]bool{inode: true}) {
			if p == 0 {
				t.Errorf("port 0 reported")
			}
		}
	})
}

// lockedReader runs reads on one OS thread, whose tid it knows.
type lockedReader struct {
	tid  int
	work chan func()
}

func newLockedReader(t *testing.T) *lockedReader {
	r := &lockedReader{work: make(chan func())}
	tid := make(chan int)
	go func() {
		runtime.LockOSThread() // the thread ends with the goroutine
		tid <- unix.Gettid()
		for f := range r.work {
			f()
		}
	}()
	r.tid = <-tid
	t.Cleanup(func() { close(r.work) })
	return r
}

// read reads n bytes of c on r's thread.
func (r *lockedReader) read(t *testing.T, c net.Conn, n int) {
	t.Helper()
	done := make(chan error, 1)
	r.work <- func() {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err := io.ReadFull(c, make([]byte, n))
		done <- err
	}
	if err := <-done; err != nil {
		t.Fatalf("read on thread %d: %v", r.tid, err)
	}
}

// connPair listens on network/addr, connects from the same process and
// returns the broker's end and the client's.
func connPair(t *testing.T, network, listen, dial string) (ln net.Listener, broker, client net.Conn) {
	t.Helper()
	ln, err := net.Listen(network, listen)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	port := ln.Addr().(*net.TCPAddr).Port
	client, err = net.DialTimeout("tcp", net.JoinHostPort(dial, strconv.Itoa(port)), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	if broker, err = ln.Accept(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { broker.Close() })
	return ln, broker, client
}

// sockFamily is the address family of c's socket.
func sockFamily(t *testing.T, c net.Conn) int {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var sa unix.Sockaddr
	raw.Control(func(fd uintptr) { sa, err = unix.Getsockname(int(fd)) })
	if err != nil {
		t.Fatal(err)
	}
	switch sa.(type) {
	case *unix.SockaddrInet4:
		return unix.AF_INET
	case *unix.SockaddrInet6:
		return unix.AF_INET6
	}
	return -1
}

func portOf(ln net.Listener) uint16 { return uint16(ln.Addr().(*net.TCPAddr).Port) }

// TestConnThreads: this process is the "broker". A connection to one of
// Ports is reported once, with the thread that reads it and both ends as
// the wire decoder names them (a dual-stack listener's IPv4 connection as
// IPv4); more reads on it by the same thread report nothing; a read by
// another thread reports the move; reads on a port not in Ports report
// nothing.
func TestConnThreads(t *testing.T) {
	requireRoot(t)
	v4ln, v4broker, v4client := connPair(t, "tcp4", "127.0.0.1:0", "127.0.0.1")
	// A dual-stack socket (AF_INET6) taking an IPv4 connection: the
	// kernel holds ::ffff:127.0.0.1.
	dsln, dsbroker, dsclient := connPair(t, "tcp", "[::]:0", "127.0.0.1")
	if fam := sockFamily(t, dsbroker); fam != unix.AF_INET6 {
		t.Fatalf("the dual-stack listener's connection is of family %d, want AF_INET6", fam)
	}
	_, otherbroker, otherclient := connPair(t, "tcp4", "127.0.0.1:0", "127.0.0.1")
	var v6ln net.Listener
	var v6broker, v6client net.Conn
	if l, err := net.Listen("tcp6", "[::1]:0"); err == nil {
		l.Close()
		v6ln, v6broker, v6client = connPair(t, "tcp6", "[::1]:0", "::1")
	} else {
		t.Logf("no IPv6 loopback (%v): IPv6 connection not tested", err)
	}
	ports := []uint16{portOf(v4ln), portOf(dsln)}
	if v6ln != nil {
		ports = append(ports, portOf(v6ln))
	}

	tr, err := Open(Config{PID: os.Getpid(), LogDirs: []string{t.TempDir()}, Conns: true, Ports: ports})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	t.Logf("mode: %s", tr.Mode())
	if !slices.Equal(tr.Mode().Conns, ports) {
		t.Errorf("mode lists ports %v, want %v", tr.Mode().Conns, ports)
	}
	var (
		mu  sync.Mutex
		got []*event.ConnThread
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runErr := make(chan error, 1)
	go func() {
		runErr <- tr.RunAll(ctx, Handlers{ConnThread: func(c *event.ConnThread) error {
			mu.Lock()
			got = append(got, c)
			mu.Unlock()
			return nil
		}})
	}()
	// waitFor waits until n events arrived, or 3 s.
	waitFor := func(n int) []*event.ConnThread {
		deadline := time.Now().Add(3 * time.Second)
		for {
			mu.Lock()
			out := slices.Clone(got)
			mu.Unlock()
			if len(out) >= n || time.Now().After(deadline) {
				return out
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	r1, r2 := newLockedReader(t), newLockedReader(t)
	type conn struct {
		name           string
		broker, client net.Conn
		wantClient     string
		wantBroker     string
	}
	conns := []conn{
		{"ipv4", v4broker, v4client, v4client.LocalAddr().String(), v4client.RemoteAddr().String()},
		{"dual-stack", dsbroker, dsclient, dsclient.LocalAddr().String(), dsclient.RemoteAddr().String()},
	}
	if v6ln != nil {
		conns = append(conns, conn{"ipv6", v6broker, v6client, v6client.LocalAddr().String(), v6client.RemoteAddr().String()})
	}
	start := time.Now()
	for i, c := range conns {
		// The first request on the connection, then more on the same
		// thread.
		for range 3 {
			if _, err := c.client.Write([]byte("request")); err != nil {
				t.Fatal(err)
			}
			r1.read(t, c.broker, len("request"))
		}
		evs := waitFor(i + 1)
		if len(evs) != i+1 {
			t.Fatalf("%s: %d events after %d connections: %+v", c.name, len(evs), i+1, evs)
		}
		e := evs[i]
		t.Logf("%s: %+v", c.name, *e)
		if e.Kind != event.KindConnThread || e.TID != r1.tid || e.Client != c.wantClient || e.Broker != c.wantBroker {
			t.Errorf("%s: got %+v, want tid %d client %s broker %s", c.name, *e, r1.tid, c.wantClient, c.wantBroker)
		}
		if e.Time.Before(start.Add(-time.Second)) || e.Time.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: time %v, not around now (%v)", c.name, e.Time, start)
		}
		if e.Thread == "" {
			t.Errorf("%s: no thread name", c.name)
		}
	}
	if conns[1].wantClient[:len("127.0.0.1:")] != "127.0.0.1:" || conns[1].wantBroker[:len("127.0.0.1:")] != "127.0.0.1:" {
		t.Errorf("dual-stack connection's ends are %s and %s, want IPv4", conns[1].wantClient, conns[1].wantBroker)
	}

	// A port not in Ports: nothing, on either thread.
	for _, r := range []*lockedReader{r1, r2} {
		if _, err := otherclient.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		r.read(t, otherbroker, 1)
	}
	// The connection handed to another thread: one more event.
	if _, err := v4client.Write([]byte("moved")); err != nil {
		t.Fatal(err)
	}
	r2.read(t, v4broker, len("moved"))
	evs := waitFor(len(conns) + 1)
	time.Sleep(200 * time.Millisecond) // anything else would be in by now
	cancel()
	select {
	case err := <-runErr:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunAll did not return 10s after its context ended")
	}
	mu.Lock()
	evs = slices.Clone(got)
	mu.Unlock()
	if len(evs) != len(conns)+1 {
		for _, e := range evs {
			t.Logf("event %+v", *e)
		}
		t.Fatalf("%d events, want %d (one per connection, one for the move)", len(evs), len(conns)+1)
	}
	moved := evs[len(conns)]
	if moved.TID != r2.tid || moved.Client != conns[0].wantClient || moved.Broker != conns[0].wantBroker {
		t.Errorf("move: got %+v, want tid %d on %s", *moved, r2.tid, conns[0].wantClient)
	}
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stats: %d connection events, %d receives on the ports, %d lost", st.ConnEvents, st.ConnRecvs, st.ConnRingbufDrops)
	if st.ConnEvents != uint64(len(evs)) || st.ConnRingbufDrops != 0 {
		t.Errorf("stats %+v, %d events", st, len(evs))
	}
	closeAndCheckPrograms(t, tr, 14+1)
	// 3 reads per connection and the move's: the other port's are not
	// counted. A read may take more than one receive, never fewer.
	if want := uint64(3*len(conns) + 1); st.ConnRecvs < want {
		t.Errorf("%d receives on the ports counted, want at least %d", st.ConnRecvs, want)
	}
}

// TestListenPorts: this process's listeners, IPv4 and dual-stack, are
// found from its sockets; a process without any has none.
func TestListenPorts(t *testing.T) {
	a, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := net.Listen("tcp", "[::]:0")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ports, err := ListenPorts(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range []net.Listener{a, b} {
		if !slices.Contains(ports, portOf(ln)) {
			t.Errorf("listening ports %v lack %d", ports, portOf(ln))
		}
	}
	sleep := exec.Command("sleep", "30")
	exited, err := lab.StartChild(sleep)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); <-exited }()
	if ports, err := ListenPorts(sleep.Process.Pid); !errors.Is(err, ErrNoListenPorts) {
		t.Errorf("sleep listens on %v (%v), want ErrNoListenPorts", ports, err)
	}
}
