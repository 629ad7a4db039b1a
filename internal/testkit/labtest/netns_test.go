package labtest_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestLabtestHelperProcess is the entry point of labtest's helper
// processes (NetnsProducer); a no-op in a normal run.
func TestLabtestHelperProcess(t *testing.T) { labtest.HelperProcess(t) }

// TestNewNetns checks the namespace's addressing and that a program run
// in it reaches a listener on HostIP across the veth, also after Recreate.
func TestNewNetns(t *testing.T) {
	ns := labtest.NewNetns(t)
	if !ns.HostIP.Is4() || ns.NsIP != ns.HostIP.Next() || len(ns.HostIf) > 15 || len(ns.NsIf) > 15 {
		t.Fatalf("bad netns %+v", ns)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if out, err := ns.Command(ctx, "ip", "-o", "addr", "show", "dev", ns.NsIf).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "inet "+ns.NsIP.String()+"/30") {
		t.Fatalf("ip addr in netns: %v: %s", err, out)
	}
	dial := func() {
		t.Helper()
		bash := labtest.Tool("bash")
		if bash == "" {
			t.Log("no bash: connectivity not checked")
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ns.HostIP.String(), "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		go func() {
			if c, err := ln.Accept(); err == nil {
				_, _ = c.Write([]byte("hello from " + c.RemoteAddr().String() + "\n"))
				c.Close()
			}
		}()
		host, port, _ := net.SplitHostPort(ln.Addr().String())
		out, err := ns.Command(ctx, bash, "-c", "exec 3<>/dev/tcp/"+host+"/"+port+" && cat <&3").CombinedOutput()
		if want := "hello from " + ns.NsIP.String() + ":"; err != nil || !strings.HasPrefix(string(out), want) {
			t.Fatalf("dial %s from netns: %v: %q, want %q...", ln.Addr(), err, out, want)
		}
	}
	dial()
	idx, err := ns.HostIndex()
	if err != nil {
		t.Fatal(err)
	}
	if err := ns.SetHostLink(false); err != nil {
		t.Fatal(err)
	}
	if err := ns.SetHostLink(true); err != nil {
		t.Fatal(err)
	}
	if err := ns.Recreate(); err != nil {
		t.Fatal(err)
	}
	if idx2, err := ns.HostIndex(); err != nil || idx2 == idx {
		t.Fatalf("ifindex after Recreate: %d (was %d), %v", idx2, idx, err)
	}
	dial()
}

// outcome is one result of (*capture.Live).Next.
type outcome struct {
	what string // "packets", "timeout" or "error: ..."
	at   time.Time
}

// probe reads a capture.Live on the host end of the veth and records what
// Next returns. With clearErr, after an error it reads (and so clears)
// the socket's SO_ERROR, recording the errno.
type probe struct {
	name     string
	clearErr bool
	mu       sync.Mutex
	outcomes []outcome
	inode    string
}

func (p *probe) add(what string, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcomes = append(p.outcomes, outcome{what, at})
}

// phase is a stretch of the experiment, from start on.
type phase struct {
	name  string
	start time.Time
}

// report summarises Next's results per phase: counts per outcome, and
// when the first of each began, relative to the phase start.
func (p *probe) report(phases []phase) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for i, ph := range phases {
		var order []string
		count, first := map[string]int{}, map[string]time.Time{}
		for _, o := range p.outcomes {
			if o.at.Before(ph.start) || i+1 < len(phases) && !o.at.Before(phases[i+1].start) {
				continue
			}
			if _, ok := count[o.what]; !ok {
				order = append(order, o.what)
				first[o.what] = o.at
			}
			count[o.what]++
		}
		fmt.Fprintf(&b, "\n  %s (from %.2fs):", ph.name, ph.start.Sub(phases[0].start).Seconds())
		for _, what := range order {
			fmt.Fprintf(&b, " %dx %s (first after %v);", count[what], what, first[what].Sub(ph.start).Round(time.Millisecond))
		}
	}
	return b.String()
}

// liveFD digs the AF_PACKET socket out of a capture.Live (test-only
// introspection; -1 if the fields moved).
func liveFD(lv *capture.Live) int {
	tp := reflect.ValueOf(lv).Elem().FieldByName("tp")
	if !tp.IsValid() || tp.IsNil() {
		return -1
	}
	fd := tp.Elem().FieldByName("fd")
	if !fd.IsValid() || fd.Kind() != reflect.Int {
		return -1
	}
	return int(fd.Int())
}

// packetSocket returns the /proc/net/packet "Iface R" columns of the socket
// with the given inode.
func packetSocket(inode string) string {
	b, _ := os.ReadFile("/proc/net/packet")
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 9 && f[8] == inode {
			return "ifindex=" + f[4] + " running=" + f[5]
		}
	}
	return "gone"
}

func (p *probe) run(ctx context.Context, cfg capture.LiveConfig, opened chan<- error) {
	lv, err := capture.OpenLive(cfg)
	opened <- err
	if err != nil {
		return
	}
	defer lv.Close()
	fd := liveFD(lv)
	if l, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd)); err == nil {
		p.mu.Lock()
		p.inode = strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")
		p.mu.Unlock()
	}
	for ctx.Err() == nil {
		_, _, _, err := lv.Next()
		now := time.Now()
		switch {
		case err == nil:
			p.add("packets", now)
		case errors.Is(err, capture.ErrTimeout):
			p.add("timeout", now)
		default:
			what := "error: " + err.Error()
			if p.clearErr && fd >= 0 {
				soerr, gerr := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR)
				what += fmt.Sprintf("; SO_ERROR=%d (%v) %v", soerr, unix.Errno(soerr), gerr)
			}
			p.add(what, now)
			time.Sleep(20 * time.Millisecond) // a persistent error must not spin
		}
	}
}

func (p *probe) socketState() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return packetSocket(p.inode)
}

// session is one source.Live run on the host veth.
type session struct {
	opened, ended time.Time
	err           error
	produces      []time.Time // Arrival of the producer's Produce requests
	n             int         // identical open failures merged into this one
}

// TestNetnsLiveCaptureLinkFlap runs a producer inside a namespace against a
// broker in the root namespace, captures on the host end of the veth, and
// takes the link down and up, then deletes and recreates it: what the
// agent's capture must survive. It logs what the AF_PACKET sockets do and
// asserts what the agent can rely on.
//
// Observed (Linux 6.18, gopacket v1.7.0 afpacket, TPACKET_V3 ring):
//
//   - Link down (ip link set IF down): the kernel unhooks the socket
//     (/proc/net/packet running=0) and sets sk_err = ENETDOWN, so poll()
//     reports POLLERR and (*capture.Live).Next returns "capture on IF:
//     packet poll failed" (afpacket.ErrPoll, within ms of the cut; the
//     errno is not in the error, SO_ERROR holds 100 = ENETDOWN).
//     source.Live returns that error: the capture session ends.
//   - The error is sticky: until SO_ERROR is read (getsockopt clears it),
//     every Next that has to poll returns it at once, with no 150 ms wait
//     (a loop that just retries Next spins). After SO_ERROR is read, Next
//     returns ErrTimeout while the link is down. Packets already in the
//     ring (the last block, <= 10 ms) are still returned after the error.
//   - Link up again: the kernel re-hooks the same socket (running=1, same
//     ifindex) and packets flow into its ring again: a reader that cleared
//     SO_ERROR reads them normally; one that did not gets them interleaved
//     with the sticky error. OpenLive while the link is down succeeds, but
//     binding to a down interface sets ENETDOWN at once, so its first Next
//     fails the same way; a new OpenLive once the link is up captures, and
//     source.Live decodes the ongoing connections (the decoder resyncs).
//   - TCP across the veth survives a 2 s outage (the producer's records
//     are acked in a burst once the link is back), and even a delete and
//     recreate 1 s later (same addresses): no reconnect needed.
//   - Link deleted: first like down (ENETDOWN via POLLERR), then the socket
//     is detached for good (/proc/net/packet ifindex=-1 running=0).
//     OpenLive by name fails ("route ip+net: no such network interface")
//     until the interface exists again. After it is recreated (new
//     ifindex) the old socket never receives again, and gets no new error:
//     with SO_ERROR cleared it times out forever. Only a new OpenLive by
//     name captures the new interface.
//
// So the agent must treat any Next/source.Live error other than
// ErrTimeout as "close and reopen by name", retry OpenLive with a backoff
// while the interface is missing or down (an open on a down link fails at
// the first Next), and, since a socket of a deleted-and-recreated
// interface just goes quiet, also reopen when the interface's ifindex
// changed (net.InterfaceByName) or nothing was captured for a while.
func TestNetnsLiveCaptureLinkFlap(t *testing.T) {
	labtest.RequireRoot(t)
	labtest.RequireKafka(t)
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	t.Logf("kernel %s", unix.ByteSliceToString(uts.Release[:]))
	ns := labtest.NewNetns(t)
	// Bounded: at most 30 s to start the broker, 30 s for the rest (which
	// takes about 12 s).
	b := labtest.Broker(t, lab.BrokerConfig{AdvertisedHost: ns.HostIP.String(), StartTimeout: 30 * time.Second})
	deadline := time.Now().Add(30 * time.Second)
	_, portStr, _ := net.SplitHostPort(b.Addr())
	port, _ := strconv.Atoi(portStr)
	addr := net.JoinHostPort(ns.HostIP.String(), portStr)
	const clientID = "kscope-netns-flap"

	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	capCtx, stopCapture := context.WithCancel(ctx)
	defer stopCapture()
	cfg := capture.LiveConfig{Interface: ns.HostIf, Ports: []uint16{uint16(port)}}

	// The decoding capture: source.Live, reopened by name whenever it
	// ends with an error, as an agent would.
	var mu sync.Mutex
	var sessions []*session
	liveDone := make(chan struct{})
	go func() {
		defer close(liveDone)
		for capCtx.Err() == nil {
			s := &session{opened: time.Now(), n: 1}
			wcfg := wire.DefaultConfig()
			wcfg.Ports = nil // from cfg
			_, err := source.Live(capCtx, cfg, source.Options{Wire: wcfg}, func(r *event.Request) {
				if r.ClientID == clientID && r.API == "Produce" {
					mu.Lock()
					s.produces = append(s.produces, r.Arrival)
					mu.Unlock()
				}
			}, nil)
			mu.Lock()
			s.ended, s.err = time.Now(), err
			if n := len(sessions); n > 0 && err != nil && len(s.produces) == 0 && len(sessions[n-1].produces) == 0 &&
				sessions[n-1].err != nil && sessions[n-1].err.Error() == err.Error() {
				sessions[n-1].ended, sessions[n-1].n = s.ended, sessions[n-1].n+1
			} else {
				sessions = append(sessions, s)
			}
			mu.Unlock()
			if err != nil {
				select {
				case <-capCtx.Done():
				case <-time.After(100 * time.Millisecond):
				}
			}
		}
	}()
	ifindex, err := ns.HostIndex()
	if err != nil {
		t.Fatal(err)
	}
	labtest.WaitLiveSocket(ctx, t, ifindex, func() error {
		select {
		case <-liveDone:
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("source.Live: %v", sessions[0].err)
		default:
			return nil
		}
	})

	// Raw probes on the same interface: one that ignores errors, one that
	// clears SO_ERROR after each.
	probes := []*probe{{name: "Next, errors ignored"}, {name: "Next, SO_ERROR read after errors", clearErr: true}}
	var probesWG sync.WaitGroup
	for _, p := range probes {
		opened := make(chan error, 1)
		probesWG.Add(1)
		go func() {
			defer probesWG.Done()
			p.run(capCtx, cfg, opened)
		}()
		if err := <-opened; err != nil {
			t.Fatalf("OpenLive %s: %v", ns.HostIf, err)
		}
	}
	stop := func() {
		stopCapture()
		<-liveDone
		probesWG.Wait()
	}
	defer stop()

	t0 := time.Now()
	var marks []string
	mark := func(format string, args ...any) time.Time {
		now := time.Now()
		var st []string
		for _, p := range probes {
			st = append(st, p.socketState())
		}
		marks = append(marks, fmt.Sprintf("%6.2fs %s; probe sockets: %s", now.Sub(t0).Seconds(), fmt.Sprintf(format, args...), strings.Join(st, ", ")))
		return now
	}
	sleep := func(d time.Duration) {
		select {
		case <-ctx.Done():
			t.Fatalf("out of time: %v", ctx.Err())
		case <-time.After(d):
		}
	}

	// Phase 1: 6 s of producing at 200/s, the link down from 2 s to 4 s.
	p1 := labtest.NetnsProducer(ctx, t, ns, labtest.ProducerJob{
		Addr: addr, Topic: "flap", ClientID: clientID, Rate: 200, Duration: 6 * time.Second, FlushTimeout: 10 * time.Second})
	mark("producer 1 started")
	sleep(2 * time.Second)
	tDown := time.Now()
	if err := ns.SetHostLink(false); err != nil {
		t.Fatal(err)
	}
	mark("link %s down", ns.HostIf)
	sleep(2 * time.Second)
	mark("link still down")
	tUp := time.Now()
	if err := ns.SetHostLink(true); err != nil {
		t.Fatal(err)
	}
	mark("link %s up", ns.HostIf)
	res1, err := p1.Wait()
	if err != nil {
		t.Fatal(err)
	}
	mark("producer 1 done")
	t.Logf("producer 1: %+v", res1)

	// Phase 2: the link deleted and recreated (a new ifindex) under load.
	p2 := labtest.NetnsProducer(ctx, t, ns, labtest.ProducerJob{
		Addr: addr, Topic: "flap", ClientID: clientID, Rate: 200, Duration: 5 * time.Second, FlushTimeout: 10 * time.Second})
	mark("producer 2 started")
	sleep(1500 * time.Millisecond)
	tDel := time.Now()
	if err := ns.DeleteLink(); err != nil {
		t.Fatal(err)
	}
	mark("link %s deleted", ns.HostIf)
	sleep(time.Second)
	tRe := time.Now()
	if err := ns.Recreate(); err != nil {
		t.Fatal(err)
	}
	newIndex, _ := ns.HostIndex()
	mark("link %s recreated: ifindex %d -> %d", ns.HostIf, ifindex, newIndex)
	res2, err := p2.Wait()
	if err != nil {
		t.Fatal(err)
	}
	mark("producer 2 done")
	t.Logf("producer 2: %+v", res2)
	sleep(300 * time.Millisecond)
	stop()

	t.Logf("timeline:\n%s", strings.Join(marks, "\n"))
	phases := []phase{{"link up", t0}, {"link down", tDown}, {"link up again", tUp},
		{"link deleted", tDel}, {"link recreated", tRe}}
	for _, p := range probes {
		t.Logf("probe %q (Next results):%s", p.name, p.report(phases))
	}
	var before, between, after, afterRe int
	mu.Lock()
	var sb strings.Builder
	for _, s := range sessions {
		fmt.Fprintf(&sb, "\n  %6.2fs..%6.2fs %d Produce requests, ended with %v", s.opened.Sub(t0).Seconds(), s.ended.Sub(t0).Seconds(), len(s.produces), s.err)
		if s.n > 1 {
			fmt.Fprintf(&sb, " (%d times)", s.n)
		}
		for _, at := range s.produces {
			switch {
			case at.Before(tDown):
				before++
			case at.Before(tUp):
				between++
			case at.Before(tDel):
				after++
			case at.After(tRe):
				afterRe++
			}
		}
	}
	mu.Unlock()
	t.Logf("source.Live sessions on %s:%s", ns.HostIf, sb.String())
	t.Logf("decoded Produce requests: %d before the cut, %d while down, %d after link up, %d after recreate", before, between, after, afterRe)

	if res1.Acked == 0 || res1.AckedAfter(tUp.Add(time.Second)) == 0 {
		t.Errorf("producer 1 made no progress after the link came back: %+v", res1)
	}
	if before == 0 || after == 0 {
		t.Errorf("Produce requests decoded on %s: %d before the cut, %d after link up; want some of both", ns.HostIf, before, after)
	}
	if res2.AckedAfter(tRe.Add(time.Second)) > 0 && afterRe == 0 {
		t.Errorf("producer 2 made progress after the link was recreated, but no Produce request was decoded on the new link")
	}
}
