package e2e

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/bench"
	"github.com/kscope-dev/kscope/internal/cli"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/lab"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/report"
	"github.com/kscope-dev/kscope/internal/testkit/labtest"
	"github.com/kscope-dev/kscope/internal/use"
)

// useRun samples USE every second in the background, as `kscope use`
// does, and keeps the samples.
type useRun struct {
	mu      sync.Mutex
	samples []*use.Sample
	cancel  context.CancelFunc
	done    chan error
}

func startUse(t *testing.T, cfg use.Config) *useRun {
	t.Helper()
	s, err := use.NewSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("use: notes %q", s.Notes())
	ctx, cancel := context.WithCancel(context.Background())
	u := &useRun{cancel: cancel, done: make(chan error, 1)}
	go func() {
		u.done <- use.Run(ctx, s, time.Second, func(smp *use.Sample) error {
			u.mu.Lock()
			u.samples = append(u.samples, smp)
			u.mu.Unlock()
			return nil
		})
	}()
	t.Cleanup(func() { u.stop(t) })
	return u
}

// stop ends the sampling (once) and returns every sample.
func (u *useRun) stop(t *testing.T) []*use.Sample {
	t.Helper()
	if u.cancel != nil {
		u.cancel()
		u.cancel = nil
		if err := <-u.done; err != nil {
			t.Errorf("use.Run: %v", err)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*use.Sample(nil), u.samples...)
}

// useWithin returns the samples whose whole interval lies in [from, to].
func useWithin(samples []*use.Sample, from, to time.Time) []*use.Sample {
	var out []*use.Sample
	for _, s := range samples {
		start := s.Time.Add(-time.Duration(s.IntervalS * float64(time.Second)))
		if !start.Before(from) && !s.Time.After(to) {
			out = append(out, s)
		}
	}
	return out
}

// useNaming counts the samples whose verdict names resource saturated.
func useNaming(samples []*use.Sample, resource string) int {
	n := 0
	for _, s := range samples {
		if s.Verdict.Names(resource, use.KindSaturation) {
			n++
		}
	}
	return n
}

// TestUseCPU: a real broker under `kscope bench run --rate max` load
// (bench.Run, one producer and one consumer as the command's defaults)
// for 15 s on this 2-core machine: the samples during the load name the
// CPUs saturated (run queue above the CPUs, PSI cpu some). During the
// load, `kscope use --format json` and `kscope record` run too: the
// recording's use.jsonl gets the USE panel of `kscope report`.
func TestUseCPU(t *testing.T) {
	labtest.RequireRoot(t)
	b := labtest.Broker(t, lab.BrokerConfig{})
	logDir := b.LogDirs()[0]
	m, err := hostinfo.MountOf(b.PID(), logDir)
	if err != nil {
		t.Fatal(err)
	}
	// Some full runs saw the load on cpu0 alone (machine 50%, cpu0
	// 100%): say which CPUs the test and the broker may run on.
	for _, p := range []string{"self", strconv.Itoa(b.PID())} {
		if st, err := os.ReadFile("/proc/" + p + "/status"); err == nil {
			for _, l := range strings.Split(string(st), "\n") {
				if strings.HasPrefix(l, "Cpus_allowed_list:") {
					t.Logf("%s: %s", p, l)
				}
			}
		}
	}
	u := startUse(t, use.Config{PID: b.PID(), Devices: []string{m.Device}})
	time.Sleep(2 * time.Second) // a baseline (other tests may load this machine too)

	var (
		loadStart        time.Time
		wg               sync.WaitGroup
		cliOut, cliErr   bytes.Buffer
		cliCode, recCode = -1, -1
		recErr           bytes.Buffer
		recDir           = filepath.Join(t.TempDir(), "rec")
		_, port, _       = net.SplitHostPort(b.Addr())
		started          = make(chan struct{})
		aborted          = make(chan struct{})
	)
	// kscope use and kscope record run while the load does.
	wg.Add(2)
	go func() {
		defer wg.Done()
		select {
		case <-started:
		case <-aborted:
			return
		}
		cliCode = cli.Main([]string{"use", "--pid", strconv.Itoa(b.PID()), "--log-dirs", logDir, "--duration", "4500ms", "--format", "json"}, &cliOut, &cliErr)
	}()
	go func() {
		defer wg.Done()
		select {
		case <-started:
		case <-aborted:
			return
		}
		recCode = cli.Main([]string{"record", "--pid", strconv.Itoa(b.PID()), "--log-dirs", logDir, "--iface", "lo", "--port", port,
			"--duration", "8s", "--out", recDir, "-q"}, io.Discard, &recErr)
	}()
	defer func() { close(aborted); wg.Wait() }()
	res := benchRun(t, context.Background(), bench.Config{
		Bootstrap: []string{b.Addr()}, Topics: []string{"use-cpu"}, Partitions: 4,
		Producers: 1, Consumers: 1, RateMax: true, Duration: 13 * time.Second, Warmup: 2 * time.Second,
		MessageSize: "1024", Acks: "all", Idempotent: true, Linger: 5 * time.Millisecond, DrainTimeout: 10 * time.Second,
		OnStart: func(first, _ time.Time) { loadStart = first; close(started) },
	})
	loadEnd := time.Now()
	wg.Wait()
	time.Sleep(1100 * time.Millisecond)
	samples := u.stop(t)
	t.Logf("load: %.0f msg/s, %d acked", res.Totals.MsgsPerSec, res.Totals.Acked)

	for _, s := range samples {
		phase := "idle"
		if !s.Time.Before(loadStart) && !s.Time.After(loadEnd) {
			phase = "load"
		}
		psi := "n/a"
		if s.CPU.PSI != nil {
			psi = fmt.Sprintf("%.1f%%", s.CPU.PSI.SomePct)
		}
		t.Logf("%s %s cpu %.1f%% runq %.2f/%d psi some %s | %s", s.Time.Format("15:04:05"), phase, s.CPU.UtilPct, s.CPU.RunQueue, s.CPU.CPUs, psi, s.Verdict.Line)
	}
	during := useWithin(samples, loadStart.Add(time.Second), loadEnd)
	if len(during) < 10 {
		t.Fatalf("%d samples during the %v of load, want at least 10", len(during), loadEnd.Sub(loadStart).Round(time.Second))
	}
	if n := useNaming(during, "cpu"); 2*n < len(during) {
		t.Errorf("the verdict names cpu saturated in %d of %d samples under load, want at least half", n, len(during))
	}
	for _, s := range during {
		if s.FDs.Broker == nil || s.FDs.Broker.Open < 10 || len(s.Disks) != 1 || s.Disks[0].Dev != m.Device {
			t.Fatalf("broker files %+v, disks %+v (want %s)", s.FDs.Broker, s.Disks, m.Device)
		}
	}

	// kscope use --format json, during the load.
	if cliCode != 0 {
		t.Fatalf("kscope use: exit %d: %s", cliCode, cliErr.String())
	}
	var lines, cpuNamed int
	sc := bufio.NewScanner(&cliOut)
	for sc.Scan() {
		var s use.Sample
		if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
			t.Fatalf("kscope use --format json: %v: %s", err, sc.Text())
		}
		lines++
		if s.Verdict.Names("cpu", use.KindSaturation) {
			cpuNamed++
		}
	}
	if lines < 3 || cpuNamed == 0 {
		t.Errorf("kscope use: %d samples (want 4), %d naming cpu saturated; stderr %s", lines, cpuNamed, cliErr.String())
	}

	// kscope record: use.jsonl, and the report's panel.
	if recCode != 0 {
		t.Fatalf("kscope record: exit %d: %s", recCode, recErr.String())
	}
	if _, err := os.Stat(filepath.Join(recDir, recording.UseFile)); err != nil {
		t.Fatalf("kscope record wrote no %s: %v", recording.UseFile, err)
	}
	d, err := report.Build(recDir, report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Use == nil || d.Use.Samples < 6 || d.Use.Saturated == 0 {
		t.Fatalf("report of the recording: USE panel %+v", d.Use)
	}
	var cpuFinding *report.UseFinding
	for i, f := range d.Use.Findings {
		if f.Resource == "cpu" && f.Kind == use.KindSaturation {
			cpuFinding = &d.Use.Findings[i]
		}
	}
	if cpuFinding == nil {
		t.Fatalf("the recording's verdicts do not name cpu saturated: %+v", d.Use.Findings)
	}
	t.Logf("recording: %d USE samples, cpu saturated in %d (first: %s)", d.Use.Samples, cpuFinding.Intervals, cpuFinding.Reason)
	var page bytes.Buffer
	if err := report.WriteHTML(&page, d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `id="`+report.UseCPUID+`"`) || !strings.Contains(page.String(), `id="use-verdicts"`) {
		t.Error("the report has no USE panel")
	}
}

// TestUseDisk: a loop device with ext4 whose writes are throttled to
// 4 MB/s by a cgroup (v2 io.max, or v1 blkio.throttle.write_bps_device),
// and dd writing O_DIRECT in that cgroup: the verdict names the loop
// device saturated while dd runs, by the cgroup's use of its limit
// (diskstats alone shows the device nearly idle: a throttled bio waits
// before it becomes a request).
func TestUseDisk(t *testing.T) {
	labtest.RequireRoot(t)
	for _, tool := range []string{"mkfs.ext4", "mount", "umount", "losetup", "dd", "sh"} {
		if labtest.Tool(tool) == "" {
			labtest.Unavailable(t, "%s not found", tool)
		}
	}
	mnt, dev := iotLoopFS(t, "ext4")
	const limit = 4_000_000
	cg, procs := useThrottleCgroup(t, dev, limit)
	u := startUse(t, use.Config{Devices: []string{dev}})
	time.Sleep(1500 * time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The shell moves itself into the cgroup, then becomes dd: every
	// write is throttled. 40 MiB at 4 MB/s: about 10 s, in 256 KiB
	// writes so that every interval holds many.
	dd := exec.CommandContext(ctx, labtest.Tool("sh"), "-c", fmt.Sprintf("echo $$ > %s && exec %s if=/dev/zero of=%s bs=256K count=160 oflag=direct",
		procs, labtest.Tool("dd"), filepath.Join(mnt, "throttled")))
	var ddOut bytes.Buffer
	dd.Stdout, dd.Stderr = &ddOut, &ddOut
	ddStart := time.Now()
	if err := dd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if dd.ProcessState == nil {
			_ = dd.Process.Kill()
			_ = dd.Wait()
		}
	})
	// kscope use, the table, while dd runs.
	time.Sleep(2 * time.Second)
	var table, tableErr bytes.Buffer
	if code := cli.Main([]string{"use", "--pid", "none", "--device", dev, "--iface", "lo", "--duration", "3500ms"}, &table, &tableErr); code != 0 {
		t.Fatalf("kscope use: exit %d: %s", code, tableErr.String())
	}
	err := dd.Wait()
	ddEnd := time.Now()
	t.Logf("dd in %s: %v: %s", cg, err, strings.TrimSpace(ddOut.String()))
	if err != nil {
		t.Fatalf("dd: %v", err)
	}
	time.Sleep(1100 * time.Millisecond)
	samples := u.stop(t)

	name := ""
	for _, s := range samples {
		if len(s.Disks) != 1 {
			t.Fatalf("disks %+v, want %s only", s.Disks, dev)
		}
		d := s.Disks[0]
		name = d.Name
		thr := "none"
		for _, th := range d.Throttles {
			thr = fmt.Sprintf("%s %s %.0f%% of %.0f B/s", th.Cgroup, th.Limit, th.Pct, th.Max)
		}
		await, full := "n/a", "n/a"
		if d.AwaitMs != nil {
			await = fmt.Sprintf("%.2fms", *d.AwaitMs)
		}
		if s.IOPSI != nil && s.IOPSI.FullPct != nil {
			full = fmt.Sprintf("some %.1f%% full %.1f%%", s.IOPSI.SomePct, *s.IOPSI.FullPct)
		}
		t.Logf("%s %s util %.1f%% aqu %.2f await %s w %.2f MB/s | throttle %s | psi io %s | %s", s.Time.Format("15:04:05.0"), d.Name,
			d.UtilPct, d.AvgQueue, await, d.WriteBps/1e6, thr, full, s.Verdict.Line)
	}
	during := useWithin(samples, ddStart.Add(500*time.Millisecond), ddEnd)
	if len(during) < 6 {
		t.Fatalf("%d samples while dd ran (%v), want at least 6", len(during), ddEnd.Sub(ddStart).Round(time.Second))
	}
	if n := useNaming(during, "disk "+name); 2*n < len(during) {
		t.Errorf("the verdict names disk %s saturated in %d of %d samples while dd ran, want at least half", name, n, len(during))
	}
	var peak float64
	for _, s := range during {
		for _, th := range s.Disks[0].Throttles {
			peak = max(peak, th.Pct)
		}
	}
	if peak < 90 || peak > 150 {
		t.Errorf("the cgroup's use of its limit peaked at %.0f%%, want about 100%%", peak)
	}
	t.Logf("kscope use:\n%s", table.String())
	if !regexp.MustCompile(`(?m)^verdict: saturated: .*disk ` + name + ` \(cgroup `).MatchString(table.String()) {
		t.Errorf("kscope use's table does not name disk %s saturated", name)
	}
}

// useThrottleCgroup makes a cgroup whose writes to dev are limited to bps
// bytes per second (cgroup v2 io.max where the io controller is on the
// unified hierarchy, else cgroup v1 blkio), removed in t.Cleanup. It
// returns the cgroup's directory and the file to write a pid into.
func useThrottleCgroup(t *testing.T, dev string, bps int) (dir, procs string) {
	t.Helper()
	name := fmt.Sprintf("kscope-use-%d-%d", os.Getpid(), time.Now().UnixNano()%1e6)
	if b, err := os.ReadFile("/sys/fs/cgroup/cgroup.controllers"); err == nil && strings.Contains(" "+string(b)+" ", " io ") {
		if sub, _ := os.ReadFile("/sys/fs/cgroup/cgroup.subtree_control"); !strings.Contains(" "+string(sub)+" ", " io ") {
			if err := os.WriteFile("/sys/fs/cgroup/cgroup.subtree_control", []byte("+io"), 0); err != nil {
				labtest.Unavailable(t, "cgroup v2: cannot enable the io controller: %v", err)
			}
		}
		dir = filepath.Join("/sys/fs/cgroup", name)
		useMkCgroup(t, dir)
		if err := os.WriteFile(filepath.Join(dir, "io.max"), fmt.Appendf(nil, "%s wbps=%d", dev, bps), 0); err != nil {
			labtest.Unavailable(t, "cgroup v2 io.max on %s: %v", dev, err)
		}
		return dir, filepath.Join(dir, "cgroup.procs")
	}
	v1 := "/sys/fs/cgroup/blkio"
	if _, err := os.Stat(filepath.Join(v1, "blkio.throttle.write_bps_device")); err != nil {
		labtest.Unavailable(t, "no cgroup I/O throttling: neither the v2 io controller nor v1 blkio.throttle (%v)", err)
	}
	dir = filepath.Join(v1, name)
	useMkCgroup(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "blkio.throttle.write_bps_device"), fmt.Appendf(nil, "%s %d", dev, bps), 0); err != nil {
		labtest.Unavailable(t, "cgroup v1 blkio.throttle.write_bps_device on %s: %v", dev, err)
	}
	return dir, filepath.Join(dir, "cgroup.procs")
}

func useMkCgroup(t *testing.T, dir string) {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		labtest.Unavailable(t, "cannot create cgroup %s: %v", dir, err)
	}
	// Registered before the writer's cleanup, so it runs after the
	// writer is gone (a cgroup with tasks cannot be removed).
	t.Cleanup(func() {
		for i := 0; ; i++ {
			err := os.Remove(dir)
			if err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			if i == 50 {
				t.Errorf("removing cgroup %s: %v", dir, err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// TestUseNIC: a veth pair into a test network namespace with a qdisc on
// the host end that loses packets (netem loss 20%, where the kernel has
// netem) or overflows (tbf at 8 Mbit/s with a 20 KB queue), and a TCP
// sender on the host streaming to a receiver in the namespace: the
// verdict names the veth saturated by its qdisc's drops, and TCP
// retransmits are counted. Neither shows in the interface's own drop
// counters: packets a qdisc drops never reach the driver (docs/use.md).
func TestUseNIC(t *testing.T) {
	labtest.RequireRoot(t)
	tc := labtest.Tool("tc")
	if tc == "" {
		labtest.Unavailable(t, "tc (iproute2) not found")
	}
	ns := labtest.NewNetns(t)
	qdisc := []string{"netem", "loss", "20%", "limit", "1000"}
	if out, err := exec.Command(tc, append([]string{"qdisc", "add", "dev", ns.HostIf, "root"}, qdisc...)...).CombinedOutput(); err != nil {
		t.Logf("netem: %v: %s; %s: using tbf instead", err, bytes.TrimSpace(out), useNetemAbsence())
		qdisc = []string{"tbf", "rate", "8mbit", "burst", "16kb", "limit", "20kb"}
		if out, err := exec.Command(tc, append([]string{"qdisc", "add", "dev", ns.HostIf, "root"}, qdisc...)...).CombinedOutput(); err != nil {
			labtest.Unavailable(t, "neither netem nor tbf qdiscs: %v: %s", err, bytes.TrimSpace(out))
		}
	}
	t.Logf("qdisc on %s: %s", ns.HostIf, strings.Join(qdisc, " "))

	// netem's loss is real loss for TCP; where netem is missing, an eBPF
	// program in the namespace drops as much on arrival. A tbf that
	// overflows is not: the local sender is told (NET_XMIT_DROP) and
	// sends again without counting a retransmission.
	lossPct, loss := 0, "netem lost 20% of the packets"
	if qdisc[0] == "tbf" {
		lossPct, loss = 5, "an eBPF program dropped 5% of the data packets on arrival"
	}
	ln := useListenInNetns(t, ns.Name, ns.NsIf, net.JoinHostPort(ns.NsIP.String(), "0"), lossPct)
	var received int64
	recvDone := make(chan struct{})
	go func() {
		defer close(recvDone)
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		received, _ = io.Copy(io.Discard, c)
	}()

	u := startUse(t, use.Config{Ifaces: []string{ns.HostIf}})
	time.Sleep(1500 * time.Millisecond)
	// Bounded: at most 64 MB or 8 s.
	sendStart := time.Now()
	conn, err := net.DialTimeout("tcp", ln.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	_ = conn.SetWriteDeadline(sendStart.Add(8 * time.Second))
	buf := make([]byte, 64<<10)
	var sent int64
	for sent < 64<<20 {
		n, err := conn.Write(buf)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	sendEnd := time.Now()
	// No graceful close: what the socket still holds would take seconds
	// to drain through the qdisc.
	_ = conn.(*net.TCPConn).SetLinger(0)
	conn.Close()
	ln.Close()
	select {
	case <-recvDone:
	case <-time.After(10 * time.Second):
		t.Error("the receiver did not finish")
	}
	time.Sleep(1100 * time.Millisecond)
	samples := u.stop(t)
	out, _ := exec.Command(tc, "-s", "qdisc", "show", "dev", ns.HostIf).CombinedOutput()
	t.Logf("sent %d bytes in %v, received %d; tc -s qdisc:\n%s", sent, sendEnd.Sub(sendStart).Round(time.Millisecond), received, out)

	var qdrops, ifdrops, retrans, outSegs int64
	during := useWithin(samples, sendStart, sendEnd.Add(time.Second))
	for _, s := range samples {
		if len(s.NICs) != 1 || s.NICs[0].Name != ns.HostIf || s.TCP == nil {
			t.Fatalf("nics %+v tcp %+v", s.NICs, s.TCP)
		}
		n := s.NICs[0]
		t.Logf("%s %s tx %.2f MB/s drops rx %d tx %d qdisc %s %v overlimits %v | tcp retrans %d of %d | %s",
			s.Time.Format("15:04:05.0"), n.Name, n.TxBps/1e6, n.RxDrops, n.TxDrops, n.Qdisc, useDeref(n.QdiscDrops), useDeref(n.QdiscOverlimits),
			s.TCP.RetransSegs, s.TCP.OutSegs, s.Verdict.Line)
	}
	for _, s := range during {
		n := s.NICs[0]
		qdrops += useDeref(n.QdiscDrops)
		ifdrops += n.RxDrops + n.TxDrops
		retrans += s.TCP.RetransSegs
		outSegs += s.TCP.OutSegs
	}
	if len(during) < 4 {
		t.Fatalf("%d samples while sending, want at least 4", len(during))
	}
	named := useNaming(during, "nic "+ns.HostIf)
	t.Logf("while sending: %d qdisc drops, %d interface drops, %d TCP retransmits of %d segments (host-wide); nic named in %d of %d samples, tcp in %d",
		qdrops, ifdrops, retrans, outSegs, named, len(during), useNaming(during, "tcp"))
	if qdrops == 0 || named == 0 {
		t.Errorf("no qdisc drops reported, or the verdict never names nic %s", ns.HostIf)
	}
	// Retransmits are real; whether they pass 1% of the segments sent
	// depends on the other traffic of the host (TCP counters are per
	// namespace, not per interface).
	if retrans == 0 {
		t.Errorf("no TCP retransmits counted while %s", loss)
	}
	if tcpNamed := useNaming(during, "tcp"); tcpNamed == 0 && 100*float64(retrans) > 2*float64(outSegs) {
		t.Errorf("retransmits were %.1f%% of the host's segments sent, but the verdict never names tcp", 100*float64(retrans)/float64(outSegs))
	}
	if sp := samples[0].NICs[0].SpeedMbps; sp != nil {
		t.Logf("%s reports a link speed of %d Mb/s (veth's nominal speed)", ns.HostIf, *sp)
	}
}

func useDeref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// useListenInNetns listens on addr inside the network namespace name,
// and, with lossPct > 0, drops that share of the data packets arriving
// on ifName there (an eBPF program on its tcx ingress): loss the sender
// is not told of, as on a real network, so TCP retransmits. A socket,
// and a tcx link, belong to the namespace they were made in, so a thread
// that enters the namespace makes them and the test uses them from
// anywhere. The thread is never given back (its namespace changed): it
// ends with its goroutine.
func useListenInNetns(t *testing.T, name, ifName, addr string, lossPct int) net.Listener {
	t.Helper()
	type result struct {
		ln   net.Listener
		loss link.Link
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		f, err := os.Open(filepath.Join("/var/run/netns", name))
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- result{err: fmt.Errorf("setns %s: %w", name, err)}
			return
		}
		var r result
		if lossPct > 0 {
			if r.loss, err = useLossProgram(ifName, lossPct); err != nil {
				ch <- result{err: err}
				return
			}
		}
		r.ln, r.err = net.Listen("tcp", addr)
		ch <- r
	}()
	r := <-ch
	if r.err != nil {
		if r.loss != nil {
			r.loss.Close()
		}
		labtest.Unavailable(t, "loss on %s in netns %s: %v", ifName, name, r.err)
	}
	t.Cleanup(func() {
		r.ln.Close()
		if r.loss != nil {
			r.loss.Close()
		}
	})
	return r.ln
}

// useLossProgram attaches to ifName's tcx ingress (in the calling
// thread's namespace) a program that drops lossPct% of the packets
// longer than 200 bytes (data segments: not SYNs, ACKs or ARP) at
// random.
func useLossProgram(ifName string, lossPct int) (link.Link, error) {
	ifc, err := net.InterfaceByName(ifName)
	if err != nil {
		return nil, err
	}
	const tcxPass, tcxDrop = 0, 2
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
		Type:    ebpf.SchedCLS,
		License: "GPL",
		Instructions: asm.Instructions{
			asm.LoadMem(asm.R2, asm.R1, 0, asm.Word), // __sk_buff.len
			asm.JLT.Imm(asm.R2, 200, "pass"),
			asm.FnGetPrandomU32.Call(),
			asm.Mod.Imm(asm.R0, 100),
			asm.JLT.Imm(asm.R0, int32(lossPct), "drop"),
			asm.Mov.Imm(asm.R0, tcxPass).WithSymbol("pass"),
			asm.Return(),
			asm.Mov.Imm(asm.R0, tcxDrop).WithSymbol("drop"),
			asm.Return(),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("loading the loss program: %w", err)
	}
	defer prog.Close() // the link holds it
	l, err := link.AttachTCX(link.TCXOptions{Interface: ifc.Index, Program: prog, Attach: ebpf.AttachTCXIngress})
	if err != nil {
		return nil, fmt.Errorf("attaching to %s's tcx ingress: %w", ifName, err)
	}
	return l, nil
}

// useNetemAbsence says why netem is missing, from the kernel's config.
func useNetemAbsence() string {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return "kernel config not readable"
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "kernel config not readable"
	}
	var found []string
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		l := sc.Text()
		if strings.Contains(l, "CONFIG_NET_SCH_NETEM") || strings.Contains(l, "CONFIG_MODULES is") || strings.HasPrefix(l, "CONFIG_MODULES=") {
			found = append(found, l)
		}
	}
	if len(found) == 0 {
		return "no CONFIG_NET_SCH_NETEM in /proc/config.gz"
	}
	return "/proc/config.gz: " + strings.Join(found, ", ")
}
