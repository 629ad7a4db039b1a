package use

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// tree is a fixture /proc and /sys: file paths (below the roots, "proc/"
// or "sys/") and contents.
type tree map[string]string

func (tr tree) write(t *testing.T, root string) {
	t.Helper()
	for p, content := range tr {
		full := filepath.Join(root, p)
		dir := filepath.Dir(full)
		if strings.HasSuffix(p, "/") { // a directory
			dir = full
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if dir == full {
			continue
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// with returns a copy of tr with the files of over replaced (an empty
// content removes the file).
func (tr tree) with(over tree) tree {
	out := tree{}
	for k, v := range tr {
		out[k] = v
	}
	for k, v := range over {
		if v == "" {
			delete(out, k)
		} else {
			out[k] = v
		}
	}
	return out
}

// fixture writes tr into a fresh root and returns a Config on it.
func fixture(t *testing.T, tr tree) (Config, string) {
	t.Helper()
	root := t.TempDir()
	tr.write(t, root)
	return Config{ProcRoot: filepath.Join(root, "proc"), SysRoot: filepath.Join(root, "sys")}, root
}

// rewrite replaces the tree under root with tr.
func rewrite(t *testing.T, root string, tr tree) {
	t.Helper()
	for _, d := range []string{"proc", "sys"} {
		if err := os.RemoveAll(filepath.Join(root, d)); err != nil {
			t.Fatal(err)
		}
	}
	tr.write(t, root)
}

func diskLine(major, minor int, name string, v ...uint64) string {
	f := []string{fmt.Sprint(major), fmt.Sprint(minor), name}
	for _, x := range v {
		f = append(f, fmt.Sprint(x))
	}
	for len(f) < 20 {
		f = append(f, "0")
	}
	return strings.Join(f, " ")
}

func nic(name string, ifindex, speed int, rxB, txB, rxP, txP, rxD, txD, rxE, txE uint64) tree {
	d := "sys/class/net/" + name + "/"
	tr := tree{d + "ifindex": fmt.Sprintln(ifindex),
		d + "statistics/rx_bytes": fmt.Sprintln(rxB), d + "statistics/tx_bytes": fmt.Sprintln(txB),
		d + "statistics/rx_packets": fmt.Sprintln(rxP), d + "statistics/tx_packets": fmt.Sprintln(txP),
		d + "statistics/rx_dropped": fmt.Sprintln(rxD), d + "statistics/tx_dropped": fmt.Sprintln(txD),
		d + "statistics/rx_errors": fmt.Sprintln(rxE), d + "statistics/tx_errors": fmt.Sprintln(txE)}
	if speed != 0 {
		tr[d+"speed"] = fmt.Sprintln(speed)
	}
	return tr
}

func merge(ts ...tree) tree {
	out := tree{}
	for _, t := range ts {
		for k, v := range t {
			out[k] = v
		}
	}
	return out
}

const meminfo = `MemTotal:       16000000 kB
MemFree:         4000000 kB
MemAvailable:    8000000 kB
Cached:          5000000 kB
Active(file):    3000000 kB
Inactive(file):  3000000 kB
Dirty:             10000 kB
Writeback:             0 kB
HugePages_Total:       0
`

// base is the first snapshot of a host with 2 CPUs, a disk sda (and its
// partition sda1), eth0 (1 Gb/s) and a veth without a speed, a broker
// (pid 42, 95 open files of 100) and a blkio throttle of 4 MB/s on sda.
func base() tree {
	fds := tree{}
	for i := range 95 {
		fds[fmt.Sprintf("proc/42/fd/%d", i)] = "x"
	}
	return merge(tree{
		"proc/stat": `cpu  100 0 100 700 100 0 0 0 0 0
cpu0 50 0 50 350 50 0 0 0 0 0
cpu1 50 0 50 350 50 0 0 0 0 0
intr 12345 0 0
ctxt 999
procs_running 5
procs_blocked 1
`,
		"proc/loadavg":                       "3.50 2.00 1.00 5/300 1234\n",
		"proc/pressure/cpu":                  "some avg10=20.00 avg60=10.00 avg300=5.00 total=1000000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"proc/pressure/memory":               "some avg10=0.00 avg60=0.00 avg300=0.00 total=500\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=100\n",
		"proc/pressure/io":                   "some avg10=1.00 avg60=0.00 avg300=0.00 total=2000000\nfull avg10=1.00 avg60=0.00 avg300=0.00 total=1000000\n",
		"proc/meminfo":                       meminfo,
		"proc/vmstat":                        "pswpin 0\npswpout 0\npgscan_direct 0\noom_kill 0\n",
		"proc/sys/vm/dirty_ratio":            "20\n",
		"proc/sys/vm/dirty_background_ratio": "10\n",
		"proc/sys/vm/dirty_bytes":            "0\n",
		"proc/sys/vm/dirty_background_bytes": "0\n",
		"proc/sys/fs/file-nr":                "1000\t0\t100000\n",
		"proc/diskstats": diskLine(8, 0, "sda", 100, 0, 1000, 100, 300, 0, 4000, 300, 0, 1000, 2000) + "\n" +
			diskLine(8, 1, "sda1", 100, 0, 1000, 100, 300, 0, 4000, 300, 0, 1000, 2000) + "\n" +
			diskLine(7, 0, "loop0") + "\n",
		"proc/42/net/snmp": "Tcp: RtoAlgorithm MaxConn OutSegs RetransSegs InErrs OutRsts CurrEstab\nTcp: 1 -1 1000 10 0 0 7\n" +
			"Udp: InDatagrams\nUdp: 5\n",
		"proc/42/net/netstat": "TcpExt: ListenOverflows ListenDrops\nTcpExt: 0 0\n",
		"proc/42/limits":      "Limit                     Soft Limit           Hard Limit           Units\nMax open files            100                  4096                 files\n",
		"sys/block/sda/":      "",
		"sys/fs/cgroup/blkio/blkio.throttle.write_bps_device":       "",
		"sys/fs/cgroup/blkio/kafka/blkio.throttle.write_bps_device": "8:0 4000000\n",
		"sys/fs/cgroup/blkio/kafka/blkio.throttle.io_service_bytes": "8:0 Read 0\n8:0 Write 1000000\n8:0 Total 1000000\nTotal 1000000\n",
	}, fds, nic("eth0", 2, 1000, 0, 0, 0, 0, 0, 0, 0, 0), nic("veth0", 3, 0, 0, 0, 0, 0, 0, 0, 0, 0))
}

// second is one second later: CPUs 20% busy with 20% iowait, run queue
// 4, PSI cpu 25%, io full 15%; sda 95% busy; eth0 at 80% of its speed
// with 2 drops and a transmit error, and 5 qdisc drops; TCP retransmits
// 3%, 3 listen overflows; the cgroup at its limit.
func second() tree {
	return base().with(merge(tree{
		"proc/stat": `cpu  200 0 200 1300 300 0 0 0 0 0
cpu0 100 0 100 650 150 0 0 0 0 0
cpu1 100 0 100 650 150 0 0 0 0 0
procs_running 5
procs_blocked 2
`,
		"proc/pressure/cpu": "some avg10=25.00 avg60=10.00 avg300=5.00 total=1250000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
		"proc/pressure/io":  "some avg10=30.00 avg60=0.00 avg300=0.00 total=2300000\nfull avg10=15.00 avg60=0.00 avg300=0.00 total=1150000\n",
		"proc/diskstats": diskLine(8, 0, "sda", 200, 0, 3048, 300, 600, 0, 12192, 900, 1, 1950, 4500) + "\n" +
			diskLine(8, 1, "sda1", 200, 0, 3048, 300, 600, 0, 12192, 900, 1, 1950, 4500) + "\n" +
			diskLine(7, 0, "loop0") + "\n",
		"proc/42/net/snmp":    "Tcp: RtoAlgorithm MaxConn OutSegs RetransSegs InErrs OutRsts CurrEstab\nTcp: 1 -1 2000 40 0 1 8\nUdp: InDatagrams\nUdp: 5\n",
		"proc/42/net/netstat": "TcpExt: ListenOverflows ListenDrops\nTcpExt: 3 3\n",
		"sys/fs/cgroup/blkio/kafka/blkio.throttle.io_service_bytes": "8:0 Read 0\n8:0 Write 5000000\n8:0 Total 5000000\nTotal 5000000\n",
	}, nic("eth0", 2, 1000, 100_000_000, 10_000_000, 70000, 8000, 2, 0, 0, 1), nic("veth0", 3, 0, 5000, 5000, 10, 10, 0, 0, 0, 0)))
}

func qdiscs(drops uint64) func() (map[int]QdiscStats, error) {
	return func() (map[int]QdiscStats, error) {
		return map[int]QdiscStats{2: {Kind: "tbf", Drops: drops, Overlimits: drops * 2, Backlog: 3000}}, nil
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-6*max(1, math.Abs(b)) }

func TestDiffRates(t *testing.T) {
	cfg, root := fixture(t, base())
	cfg.PID, cfg.Devices = 42, []string{"sda"}
	cfg.Qdiscs = qdiscs(10)
	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a, err := r.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, root, second())
	r.qdiscs = qdiscs(15)
	b, err := r.Read(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Diff(a, b, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.CPU
	checks := []struct {
		name      string
		got, want float64
	}{
		{"interval", s.IntervalS, 1},
		{"cpus", float64(c.CPUs), 2},
		{"cpu util", c.UtilPct, 20},
		{"cpu iowait", c.IowaitPct, 20},
		{"cpu user", c.UserPct, 10},
		{"cpu0 util", c.PerCPU[0].UtilPct, 20},
		{"run queue (procs_running − the sampler)", c.RunQueue, 4},
		{"blocked", c.Blocked, 2},
		{"psi cpu some", c.PSI.SomePct, 25},
		{"psi io some", s.IOPSI.SomePct, 30},
		{"psi io full", *s.IOPSI.FullPct, 15},
		{"memory used", s.Memory.UsedPct, 50},
		{"dirty limit", float64(s.Memory.DirtyLimitBytes), 10_000_000 * 1024 / 100 * 20},
		{"dirty background", float64(s.Memory.DirtyBackgroundBytes), 10_000_000 * 1024 / 100 * 10},
		{"disk util", s.Disks[0].UtilPct, 95},
		{"disk queue", s.Disks[0].AvgQueue, 2.5},
		{"disk await", *s.Disks[0].AwaitMs, 2}, // (200 + 600) ms / 400 I/Os
		{"disk read B/s", s.Disks[0].ReadBps, 2048 * 512},
		{"disk write B/s", s.Disks[0].WriteBps, 8192 * 512},
		{"disk read iops", s.Disks[0].ReadIOPS, 100},
		{"disk write iops", s.Disks[0].WriteIOPS, 300},
		{"throttle pct", s.Disks[0].Throttles[0].Pct, 100},
		{"eth0 rx B/s", s.NICs[0].RxBps, 100e6},
		{"eth0 util", *s.NICs[0].UtilPct, 80},
		{"eth0 rx drops", float64(s.NICs[0].RxDrops), 2},
		{"eth0 tx errors", float64(s.NICs[0].TxErrors), 1},
		{"eth0 qdisc drops", float64(*s.NICs[0].QdiscDrops), 5},
		{"tcp out", float64(s.TCP.OutSegs), 1000},
		{"tcp retrans pct", *s.TCP.RetransPct, 3},
		{"tcp listen overflows", float64(s.TCP.ListenOverflows), 3},
		{"broker fds pct", *s.FDs.Broker.Pct, 95},
		{"system fds", float64(s.FDs.SystemOpen), 1000},
	}
	for _, ck := range checks {
		if !near(ck.got, ck.want) {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
	if len(s.Disks) != 1 || s.Disks[0].Name != "sda" || s.Disks[0].Dev != "8:0" || s.Disks[0].Throttles[0].Cgroup != "/kafka" {
		t.Errorf("disks: %+v", s.Disks)
	}
	if len(s.NICs) != 2 || s.NICs[1].Name != "veth0" || s.NICs[1].UtilPct != nil || s.NICs[1].SpeedMbps != nil {
		t.Errorf("veth0 has no speed, so no utilization: %+v", s.NICs)
	}
	for _, want := range []struct{ res, kind string }{
		{"cpu", KindSaturation}, {"disk sda", KindSaturation}, {"nic eth0", KindSaturation}, {"nic eth0", KindErrors},
		{"tcp", KindSaturation}, {"fds", KindUtilization},
	} {
		if !s.Verdict.Names(want.res, want.kind) {
			t.Errorf("verdict does not name %s %s: %s", want.res, want.kind, s.Verdict.Line)
		}
	}
	for _, not := range []string{"memory", "nic veth0", "io"} {
		if s.Verdict.Names(not, KindSaturation) {
			t.Errorf("verdict names %s: %s", not, s.Verdict.Line)
		}
	}
	if !strings.HasPrefix(s.Verdict.Line, "saturated: cpu (run queue 4.0 > 2 CPUs, PSI cpu some 25.0%), disk sda (util 95.0%, cgroup /kafka at 100.0% of wbps 4.0MB/s, PSI io full 15.0%)") {
		t.Errorf("line: %s", s.Verdict.Line)
	}
	// The JSON encoding round-trips.
	raw, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var back Sample
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Verdict.Line != s.Verdict.Line || *back.Disks[0].AwaitMs != 2 || back.NICs[1].UtilPct != nil {
		t.Errorf("round trip: %+v", back)
	}
	var sb strings.Builder
	if err := WriteTable(&sb, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"disk sda", "95.0%", "nic veth0", "n/a (no speed)", "tbf drops 5", "verdict: saturated: cpu"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, sb.String())
		}
	}
}

func TestCounterDelta(t *testing.T) {
	for _, c := range []struct {
		prev, cur uint64
		want      uint64
		ok        bool
	}{
		{5, 10, 5, true},
		{10, 10, 0, true},
		{math.MaxUint32 - 5, 10, 16, true},        // a 32-bit counter wrapped
		{10, 5, 0, false},                         // reset: not a wrap of 4 G
		{1 << 40, 5, 0, false},                    // a 64-bit counter reset
		{math.MaxUint64, 0, 0, false},             // never huge
		{math.MaxUint32, math.MaxUint32, 0, true}, // at the top
	} {
		got, ok := counterDelta(c.prev, c.cur)
		if got != c.want || ok != c.ok {
			t.Errorf("counterDelta(%d, %d) = %d, %v; want %d, %v", c.prev, c.cur, got, ok, c.want, c.ok)
		}
	}
}

// Counters that go backwards (a loop device detached and attached again,
// an interface made again with the same ifindex, a qdisc replaced, a
// kernel whose counter wrapped) give zero rates and a note, never
// negative or huge values.
func TestCountersBackwards(t *testing.T) {
	cfg, root := fixture(t, second())
	cfg.PID, cfg.Devices, cfg.Qdiscs = 42, []string{"sda"}, qdiscs(15)
	r, err := NewReader(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	a, err := r.Read(t0)
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, root, base().with(tree{"proc/stat": strings.Replace(base()["proc/stat"], "cpu  100", "cpu  1", 1)}))
	r.qdiscs = qdiscs(1)
	b, err := r.Read(t0.Add(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Diff(a, b, Thresholds{})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(s)
	for _, d := range s.Disks {
		if d.UtilPct != 0 || d.ReadBps != 0 || d.WriteBps != 0 || d.AvgQueue != 0 {
			t.Errorf("disk after a reset: %+v", d)
		}
	}
	for _, n := range s.NICs {
		if n.RxBps < 0 || n.TxBps < 0 || n.RxBps > 1e9 || n.RxDrops != 0 || deref(n.QdiscDrops) != 0 {
			t.Errorf("nic after a reset: %+v", n)
		}
	}
	if s.TCP.OutSegs != 0 || s.TCP.RetransSegs != 0 || s.TCP.ListenOverflows != 0 {
		t.Errorf("tcp after a reset: %+v", s.TCP)
	}
	if s.CPU.UtilPct < 0 || s.CPU.UtilPct > 100 || s.IOPSI.SomePct != 0 {
		t.Errorf("cpu %+v io %+v", s.CPU, s.IOPSI)
	}
	if strings.Contains(string(raw), "-") && strings.Contains(string(raw), `":-`) {
		t.Errorf("a negative figure: %s", raw)
	}
	joined := strings.Join(s.Notes, "; ")
	for _, want := range []string{"disk sda: counters went backwards", "nic eth0: counters went backwards", "tcp counters went backwards"} {
		if !strings.Contains(joined, want) {
			t.Errorf("no note %q in %q", want, joined)
		}
	}
	if s.Verdict.Names("disk sda", KindSaturation) || s.Verdict.Names("tcp", KindSaturation) {
		t.Errorf("reset counters must not saturate: %s", s.Verdict.Line)
	}
}

// Malformed files are errors naming the file; missing optional ones are
// notes and n/a.
func TestMalformed(t *testing.T) {
	for _, c := range []struct {
		file, content, want string
	}{
		{"proc/stat", "cpu  1 2\n", "proc/stat: line 1"},
		{"proc/stat", "intr 1\n", "no cpu line"},
		{"proc/stat", "cpu  1 2 3 x 5\n", "invalid syntax"},
		{"proc/stat", "cpu  1 2 3 4 5\ncpu99999 1 2 3 4\n", "bad cpu"},
		{"proc/stat", "cpu  1 2 3 4 5\nprocs_running -3\n", "procs_running"},
		{"proc/loadavg", "1.0 2.0\n", "proc/loadavg"},
		{"proc/loadavg", "NaN 1 1 1/2 3\n", "bad load"},
		{"proc/meminfo", "MemTotal 16 kB\n", "no ':'"},
		{"proc/meminfo", "MemTotal: lots kB\n", "MemTotal"},
		{"proc/meminfo", "MemTotal: 99999999999999999 kB\n", "out of range"},
		{"proc/diskstats", "8 0 sda 1 2 3\n", "at least 14"},
		{"proc/diskstats", "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 x\n", "field 15"},
		{"proc/pressure/io", "some avg10=1 total=2\nbogus\n", "unknown"},
		{"proc/pressure/io", "full avg10=1 total=2\n", "no some line"},
		{"proc/pressure/cpu", "some avg10=500.0 avg60=0 avg300=0 total=1\n", "bad avg10"},
		{"proc/pressure/memory", "some total=1\n", "no avg10"},
		{"proc/42/net/snmp", "Tcp: A B\nTcp: 1\n", "1 values for 2 names"},
		{"proc/42/net/snmp", "Tcp: A\n", "names without values"},
		{"proc/42/net/netstat", "TcpExt: A\nIpExt: 1\n", "values of IpExt after names of TcpExt"},
		{"proc/sys/fs/file-nr", "1 2\n", "want 3 numbers"},
		{"proc/42/limits", "Max open files  lots  4096 files\n", "bad soft limit"},
		{"proc/schedstat", "version 15\ncpu0 1 2 3\n", "at least 9"},
		{"proc/vmstat", "oom_kill\n", "want name and value"},
		{"sys/class/net/eth0/statistics/rx_bytes", "12abc\n", "rx_bytes"},
	} {
		t.Run(c.file+" "+c.want, func(t *testing.T) {
			cfg, root := fixture(t, base())
			cfg.PID, cfg.Qdiscs = 42, qdiscs(0)
			r, err := NewReader(cfg)
			if err != nil {
				t.Fatal(err)
			}
			rewrite(t, root, base().with(tree{c.file: c.content}))
			_, err = r.Read(time.Now())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Base(c.file)) {
				t.Fatalf("err = %v, want one naming %s with %q", err, c.file, c.want)
			}
		})
	}
}

func TestMissingSources(t *testing.T) {
	cfg, root := fixture(t, base())
	cfg.PID, cfg.Devices, cfg.Ifaces = 42, []string{"sda", "nvme9n1"}, []string{"eth0", "gone0"}
	s, err := NewSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// No PSI (a kernel without it, or psi=0), no broker any more, no
	// vmstat or schedstat.
	rewrite(t, root, second().with(tree{"proc/pressure/cpu": "", "proc/pressure/memory": "", "proc/pressure/io": "",
		"proc/42/limits": "", "proc/42/net/snmp": "", "proc/42/net/netstat": "", "proc/vmstat": ""}))
	os.RemoveAll(filepath.Join(root, "proc/42"))
	notes := s.Notes()
	smp, err := s.Sample(time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(append(notes, smp.Notes...), "\n")
	for _, want := range []string{"device nvme9n1: not in", "interface gone0", "schedstat", "pressure/io", "broker pid 42"} {
		if !strings.Contains(all, want) {
			t.Errorf("no note %q in:\n%s", want, all)
		}
	}
	if smp.CPU.PSI != nil || smp.IOPSI != nil || smp.Memory.PSI != nil || smp.TCP != nil || smp.FDs.Broker != nil || smp.Memory.OOMKills != nil {
		t.Errorf("n/a figures are not absent: %+v", smp)
	}
	if len(smp.Disks) != 1 || len(smp.NICs) != 1 {
		t.Errorf("disks %+v nics %+v", smp.Disks, smp.NICs)
	}
	// Notes are given once.
	again, err := s.Sample(time.Now().Add(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Notes) != 0 {
		t.Errorf("notes repeated: %q", again.Notes)
	}
}

// The sampler averages the run-queue polls of an interval and keeps each
// device's best await: a queue with await four times the best is
// saturation.
func TestSamplerRunQueueAndAwait(t *testing.T) {
	cfg, root := fixture(t, base())
	cfg.Devices = []string{"8:0"}
	s, err := NewSampler(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, running := range []int{2, 3, 4} { // minus the sampler: 1, 2, 3
		rewrite(t, root, base().with(tree{"proc/loadavg": fmt.Sprintf("1 1 1 %d/300 1\n", running)}))
		if err := s.Poll(); err != nil {
			t.Fatal(err)
		}
	}
	// Interval 1: 100 I/Os taking 100 ms in all, 1 ms each, no queue.
	t0 := time.Now()
	rewrite(t, root, base().with(tree{"proc/diskstats": diskLine(8, 0, "sda", 100, 0, 1000, 100, 400, 0, 4000, 400, 0, 1100, 2100) + "\n"}))
	s1, err := s.Sample(t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if s1.CPU.RunQueue != 2 || *s1.Disks[0].AwaitMs != 1 || *s1.Disks[0].AwaitBestMs != 1 || s1.Verdict.Names("cpu", KindSaturation) {
		t.Fatalf("interval 1: runq %v disk %+v verdict %s", s1.CPU.RunQueue, s1.Disks[0], s1.Verdict.Line)
	}
	// Interval 2: 100 I/Os of 4 ms each, a queue of 2.
	rewrite(t, root, base().with(tree{"proc/diskstats": diskLine(8, 0, "sda", 100, 0, 1000, 100, 500, 0, 4000, 800, 0, 1600, 4100) + "\n"}))
	s2, err := s.Sample(t0.Add(2 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	d := s2.Disks[0]
	if *d.AwaitMs != 4 || *d.AwaitBestMs != 1 || d.AvgQueue != 2 || !s2.Verdict.Names("disk sda", KindSaturation) ||
		!strings.Contains(s2.Verdict.Line, "queue 2.0, await 4.0ms vs best 1.0ms") {
		t.Fatalf("interval 2: %+v %s", d, s2.Verdict.Line)
	}
	// procs_running from /proc/stat without polls: 5 − 1.
	if s2.CPU.RunQueue != 4 || !s2.Verdict.Names("cpu", KindSaturation) {
		t.Fatalf("runq %v verdict %s", s2.CPU.RunQueue, s2.Verdict.Line)
	}
}

func TestVerdictThresholds(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	i := func(v int64) *int64 { return &v }
	cases := []struct {
		name string
		s    Sample
		res  string
		kind string
		want bool
	}{
		{"idle", Sample{CPU: CPU{CPUs: 2}}, "cpu", KindSaturation, false},
		{"run queue at CPUs", Sample{CPU: CPU{CPUs: 2, RunQueue: 2}}, "cpu", KindSaturation, false},
		{"run queue above CPUs", Sample{CPU: CPU{CPUs: 2, RunQueue: 2.1}}, "cpu", KindSaturation, true},
		{"psi cpu 10%", Sample{CPU: CPU{CPUs: 2, PSI: &Stall{SomePct: 10}}}, "cpu", KindSaturation, false},
		{"psi cpu 11%", Sample{CPU: CPU{CPUs: 2, PSI: &Stall{SomePct: 11}}}, "cpu", KindSaturation, true},
		{"run delay", Sample{CPU: CPU{CPUs: 2, PerCPU: []CPUOne{{CPU: 1, RunDelay: f(1.5)}}}}, "cpu", KindSaturation, true},
		{"one hot cpu", Sample{CPU: CPU{CPUs: 2, UtilPct: 50, PerCPU: []CPUOne{{CPU: 1, UtilPct: 99}}}}, "cpu", KindUtilization, true},
		{"dirty at throttle", Sample{CPU: CPU{CPUs: 1}, Memory: Memory{DirtyBytes: 60, WritebackBytes: 40, DirtyThrottleBytes: 100}}, "memory", KindSaturation, true},
		{"dirty below", Sample{CPU: CPU{CPUs: 1}, Memory: Memory{DirtyBytes: 60, DirtyThrottleBytes: 100}}, "memory", KindSaturation, false},
		{"swapping", Sample{CPU: CPU{CPUs: 1}, Memory: Memory{SwapInPages: i(3), SwapOutPages: i(0)}}, "memory", KindSaturation, true},
		{"oom", Sample{CPU: CPU{CPUs: 1}, Memory: Memory{OOMKills: i(1)}}, "memory", KindErrors, true},
		{"memory full", Sample{CPU: CPU{CPUs: 1}, Memory: Memory{TotalBytes: 100, UsedPct: 96}}, "memory", KindUtilization, true},
		{"disk 89%", Sample{CPU: CPU{CPUs: 1}, Disks: []Disk{{Name: "sda", UtilPct: 89}}}, "disk sda", KindSaturation, false},
		{"disk 90%", Sample{CPU: CPU{CPUs: 1}, Disks: []Disk{{Name: "sda", UtilPct: 90}}}, "disk sda", KindSaturation, true},
		{"queue, await steady", Sample{CPU: CPU{CPUs: 1}, Disks: []Disk{{Name: "sda", AvgQueue: 3, AwaitMs: f(1.5), AwaitBestMs: f(1)}}}, "disk sda", KindSaturation, false},
		{"queue, await rising", Sample{CPU: CPU{CPUs: 1}, Disks: []Disk{{Name: "sda", AvgQueue: 3, AwaitMs: f(2), AwaitBestMs: f(1)}}}, "disk sda", KindSaturation, true},
		{"throttled", Sample{CPU: CPU{CPUs: 1}, Disks: []Disk{{Name: "loop3", Throttles: []Throttle{{Cgroup: "/x", Limit: "wbps", Max: 100, Rate: 95, Pct: 95}}}}}, "disk loop3", KindSaturation, true},
		{"psi io full, disk idle", Sample{CPU: CPU{CPUs: 1}, IOPSI: &Stall{FullPct: f(20)}, Disks: []Disk{{Name: "sda"}}}, "io", KindSaturation, true},
		{"psi io full, disk busy", Sample{CPU: CPU{CPUs: 1}, IOPSI: &Stall{FullPct: f(20)}, Disks: []Disk{{Name: "sda", WriteIOPS: 5}}}, "disk sda", KindSaturation, true},
		{"nic no speed", Sample{CPU: CPU{CPUs: 1}, NICs: []NIC{{Name: "veth0", TxBps: 1e12}}}, "nic veth0", KindSaturation, false},
		{"nic 91%", Sample{CPU: CPU{CPUs: 1}, NICs: []NIC{{Name: "eth0", SpeedMbps: i(1000), UtilPct: f(91)}}}, "nic eth0", KindSaturation, true},
		{"qdisc drops", Sample{CPU: CPU{CPUs: 1}, NICs: []NIC{{Name: "veth0", QdiscDrops: i(1)}}}, "nic veth0", KindSaturation, true},
		{"nic errors", Sample{CPU: CPU{CPUs: 1}, NICs: []NIC{{Name: "eth0", RxErrors: 1}}}, "nic eth0", KindErrors, true},
		{"retrans 1%", Sample{CPU: CPU{CPUs: 1}, TCP: &TCP{OutSegs: 100, RetransSegs: 1, RetransPct: f(1)}}, "tcp", KindSaturation, false},
		{"retrans 2% of few", Sample{CPU: CPU{CPUs: 1}, TCP: &TCP{OutSegs: 100, RetransSegs: 2, RetransPct: f(2)}}, "tcp", KindSaturation, false},
		{"retrans 2%", Sample{CPU: CPU{CPUs: 1}, TCP: &TCP{OutSegs: 1000, RetransSegs: 20, RetransPct: f(2)}}, "tcp", KindSaturation, true},
		{"listen overflow", Sample{CPU: CPU{CPUs: 1}, TCP: &TCP{ListenOverflows: 1}}, "tcp", KindSaturation, true},
		{"fds", Sample{CPU: CPU{CPUs: 1}, FDs: FDs{Broker: &BrokerFDs{Open: 95, Limit: i(100), Pct: f(95)}}}, "fds", KindUtilization, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := Verdict(&c.s, Thresholds{})
			if got := v.Names(c.res, c.kind); got != c.want {
				t.Errorf("names %s %s = %v, want %v: %s", c.res, c.kind, got, c.want, v.Line)
			}
			if !c.want && len(v.Findings) == 0 && v.Line != "ok: no resource saturated" {
				t.Errorf("line %q", v.Line)
			}
		})
	}
	// Thresholds can be changed.
	s := Sample{CPU: CPU{CPUs: 2, PSI: &Stall{SomePct: 11}}}
	if Verdict(&s, Thresholds{CPUPSIPct: 50}).Names("cpu", KindSaturation) {
		t.Error("CPUPSIPct 50 ignored")
	}
}
