package use

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Config says what to sample, and where /proc and /sys are.
type Config struct {
	// ProcRoot and SysRoot default to /proc and /sys; tests point them
	// at fixture trees.
	ProcRoot string
	SysRoot  string
	// PID is the broker's process: its open files, and the TCP counters
	// of its network namespace (ProcRoot/PID/net). 0: no broker; TCP of
	// the sampler's own namespace (ProcRoot/net).
	PID int
	// Devices are block devices: names (loop3), /dev paths, or
	// major:minor. Empty: every whole disk (SysRoot/block/NAME) that has
	// done I/O.
	Devices []string
	// Ifaces are network interfaces; empty: every one but lo.
	Ifaces []string
	// Qdiscs returns the root qdisc of each interface by ifindex. Nil:
	// NetlinkQdiscs when SysRoot is /sys, else none (n/a).
	Qdiscs func() (map[int]QdiscStats, error)
	// Thresholds of the verdict; zero fields take DefaultThresholds'.
	Thresholds Thresholds
}

// Snapshot is the kernel's counters at one moment, as read; Diff makes
// a Sample of two.
type Snapshot struct {
	Time time.Time

	stat   *procStat
	load   loadAvg
	sched  map[int]uint64   // nil without /proc/schedstat
	psi    map[string]*psi  // by cpu, memory, io; absent: n/a
	mem    map[string]int64 // meminfo, bytes
	vm     map[string]int64 // vmstat; nil: n/a
	sysctl map[string]int64 // vm.dirty_*; absent: n/a
	disks  map[string]diskCounters
	nics   map[string]nicCounters
	qdisc  map[string]QdiscStats // by interface; nil: n/a
	snmp   map[string]map[string]int64
	net    map[string]map[string]int64 // netstat (TcpExt)
	// files: system open and max; broker: nil without one.
	fileOpen, fileMax int64
	broker            *brokerRaw
	throttles         map[throttleKey]throttleVal

	missing []string // sources not available, for notes
}

type nicCounters struct {
	ifindex              int
	speed                int64 // Mb/s; <= 0: unknown
	rxBytes, txBytes     uint64
	rxPackets, txPackets uint64
	rxDropped, txDropped uint64
	rxErrors, txErrors   uint64
}

type brokerRaw struct {
	pid   int
	open  int64
	limit int64 // -1: unlimited
}

// Reader reads Snapshots.
type Reader struct {
	cfg     Config
	devices []string // Config.Devices, /dev paths resolved to names
	qdiscs  func() (map[int]QdiscStats, error)
}

// NewReader checks that the roots hold a /proc (its stat file parses)
// and resolves the devices.
func NewReader(cfg Config) (*Reader, error) {
	if cfg.ProcRoot == "" {
		cfg.ProcRoot = "/proc"
	}
	if cfg.SysRoot == "" {
		cfg.SysRoot = "/sys"
	}
	r := &Reader{cfg: cfg, qdiscs: cfg.Qdiscs}
	if r.qdiscs == nil && filepath.Clean(cfg.SysRoot) == "/sys" {
		r.qdiscs = NetlinkQdiscs
	}
	if _, err := r.readStat(); err != nil {
		return nil, err
	}
	for _, d := range cfg.Devices {
		if d == "" {
			continue
		}
		if strings.HasPrefix(d, "/") {
			// /dev/mapper/x and /dev/disk/by-id/y are links to /dev/dm-0, /dev/sda.
			if p, err := filepath.EvalSymlinks(d); err == nil {
				d = p
			}
			d = filepath.Base(d)
		}
		r.devices = append(r.devices, d)
	}
	return r, nil
}

func (r *Reader) proc(p ...string) string {
	return filepath.Join(append([]string{r.cfg.ProcRoot}, p...)...)
}

func (r *Reader) sys(p ...string) string {
	return filepath.Join(append([]string{r.cfg.SysRoot}, p...)...)
}

// parsed reads path and parses it with fn; errors name the file.
func parsed[T any](path string, fn func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := os.ReadFile(path)
	if err != nil {
		return zero, err
	}
	v, err := fn(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

func (r *Reader) readStat() (*procStat, error) {
	return parsed(r.proc("stat"), parseProcStat)
}

// ReadRunQueue reads the number of runnable tasks now (the fourth field
// of /proc/loadavg, the sampler itself included): the cheap read the
// Sampler polls between snapshots.
func (r *Reader) ReadRunQueue() (int64, error) {
	l, err := parsed(r.proc("loadavg"), parseLoadAvg)
	return l.running, err
}

// Read takes a snapshot. /proc/stat, /proc/loadavg, /proc/meminfo and
// /proc/diskstats are required; the rest is n/a when missing. A file
// that is there but does not parse is an error.
func (r *Reader) Read(now time.Time) (*Snapshot, error) {
	s := &Snapshot{Time: now, psi: map[string]*psi{}, sysctl: map[string]int64{}}
	if err := r.readRequired(s); err != nil {
		return nil, err
	}
	for _, src := range r.optionalSources() {
		if err := src.read(s); err != nil {
			return nil, err
		}
	}
	if err := r.readNICs(s); err != nil {
		return nil, err
	}
	if r.cfg.PID > 0 {
		if err := r.readBroker(s); err != nil {
			return nil, err
		}
	}
	devs := map[string]bool{}
	for _, d := range s.disks {
		devs[fmt.Sprintf("%d:%d", d.major, d.minor)] = true
	}
	s.throttles = readThrottles(r.cfg.SysRoot, devs)
	return s, nil
}

// readRequired reads the files every snapshot needs: CPU time, load,
// memory and the disks' counters.
func (r *Reader) readRequired(s *Snapshot) error {
	var err error
	if s.stat, err = r.readStat(); err != nil {
		return err
	}
	if s.load, err = parsed(r.proc("loadavg"), parseLoadAvg); err != nil {
		return err
	}
	if s.mem, err = parsed(r.proc("meminfo"), func(b []byte) (map[string]int64, error) { return parseKeyValues(b, ":") }); err != nil {
		return err
	}
	all, err := parsed(r.proc("diskstats"), parseDiskstats)
	if err != nil {
		return err
	}
	s.disks = r.selectDisks(all, s)
	return nil
}

// optionalSource is a file whose absence only makes some figures n/a.
type optionalSource struct {
	path  string
	what  string // the figures missing without it, for the note
	parse func(s *Snapshot, b []byte) error
}

// optionalSources are the optional files, in the order they are read:
// a new figure from another file is one more entry.
func (r *Reader) optionalSources() []optionalSource {
	srcs := []optionalSource{
		{r.proc("schedstat"), "per-CPU run-queue wait, a kernel without schedstats",
			func(s *Snapshot, b []byte) (err error) { s.sched, err = parseSchedstat(b); return err }},
	}
	for _, res := range []string{"cpu", "memory", "io"} {
		srcs = append(srcs, optionalSource{r.proc("pressure", res), res + " pressure stall figures",
			func(s *Snapshot, b []byte) error {
				p, err := parsePSI(b)
				s.psi[res] = p
				return err
			}})
	}
	srcs = append(srcs, optionalSource{r.proc("vmstat"), "swapping, direct reclaim and OOM kills",
		func(s *Snapshot, b []byte) (err error) { s.vm, err = parseKeyValues(b, " "); return err }})
	for _, k := range []string{"dirty_ratio", "dirty_background_ratio", "dirty_bytes", "dirty_background_bytes"} {
		srcs = append(srcs, optionalSource{r.proc("sys", "vm", k), "the page cache's dirty limits",
			func(s *Snapshot, b []byte) error {
				v, err := parseUint(b)
				s.sysctl[k] = int64(min(v, 1<<62))
				return err
			}})
	}
	srcs = append(srcs, optionalSource{r.proc("sys", "fs", "file-nr"), "open files against the system limit",
		func(s *Snapshot, b []byte) (err error) { s.fileOpen, s.fileMax, err = parseFileNr(b); return err }})
	// TCP of the broker's network namespace, when there is a broker.
	netDir := r.proc("net")
	if r.cfg.PID > 0 {
		netDir = r.proc(strconv.Itoa(r.cfg.PID), "net")
	}
	return append(srcs,
		optionalSource{filepath.Join(netDir, "snmp"), "TCP segments and retransmissions",
			func(s *Snapshot, b []byte) (err error) { s.snmp, err = parseSNMP(b); return err }},
		optionalSource{filepath.Join(netDir, "netstat"), "listen queue overflows",
			func(s *Snapshot, b []byte) (err error) { s.net, err = parseSNMP(b); return err }},
	)
}

// read parses the source into s when it is there: a file that is missing
// or refused (PSI compiled in but off gives EOPNOTSUPP) is a note saying
// which figures are missing, one that does not parse an error.
func (src optionalSource) read(s *Snapshot) error {
	b, err := os.ReadFile(src.path)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			s.missing = append(s.missing, fmt.Sprintf("no %s (%s: %v)", src.what, src.path, pe.Err))
			return nil
		}
		return err
	}
	if err := src.parse(s, b); err != nil {
		return fmt.Errorf("%s: %w", src.path, err)
	}
	return nil
}

// selectDisks keeps the configured devices, or every whole disk that has
// done I/O.
func (r *Reader) selectDisks(all map[string]diskCounters, s *Snapshot) map[string]diskCounters {
	out := map[string]diskCounters{}
	if len(r.devices) == 0 {
		for name, d := range all {
			if d.reads+d.writes == 0 {
				continue
			}
			if _, err := os.Stat(r.sys("block", name)); err == nil {
				out[name] = d
			}
		}
		return out
	}
	for _, want := range r.devices {
		found := false
		for name, d := range all {
			if name == want || fmt.Sprintf("%d:%d", d.major, d.minor) == want {
				out[name], found = d, true
				break
			}
		}
		if !found {
			s.missing = append(s.missing, fmt.Sprintf("device %s: not in %s", want, r.proc("diskstats")))
		}
	}
	return out
}

var nicFiles = []string{"rx_bytes", "tx_bytes", "rx_packets", "tx_packets", "rx_dropped", "tx_dropped", "rx_errors", "tx_errors"}

// readNICs reads the interfaces' statistics, link speeds and qdiscs.
// An interface that disappears while it is read is left out.
func (r *Reader) readNICs(s *Snapshot) error {
	names := r.cfg.Ifaces
	if len(names) == 0 {
		entries, err := os.ReadDir(r.sys("class", "net"))
		if err != nil {
			s.missing = append(s.missing, fmt.Sprintf("%s: %v", r.sys("class", "net"), err))
			return nil
		}
		for _, e := range entries {
			if e.Name() != "lo" {
				names = append(names, e.Name())
			}
		}
	}
	sort.Strings(names)
	s.nics = map[string]nicCounters{}
	for _, name := range names {
		if name == "" || strings.ContainsAny(name, "/") || name == "." || name == ".." {
			continue
		}
		dir := r.sys("class", "net", name)
		var c nicCounters
		var v [8]uint64
		gone := false
		for i, f := range nicFiles {
			p := filepath.Join(dir, "statistics", f)
			b, err := os.ReadFile(p)
			if err != nil {
				gone = true
				break
			}
			if v[i], err = parseUint(b); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
		}
		if gone {
			if len(r.cfg.Ifaces) > 0 {
				s.missing = append(s.missing, fmt.Sprintf("interface %s: no %s", name, filepath.Join(dir, "statistics")))
			}
			continue
		}
		c.rxBytes, c.txBytes, c.rxPackets, c.txPackets = v[0], v[1], v[2], v[3]
		c.rxDropped, c.txDropped, c.rxErrors, c.txErrors = v[4], v[5], v[6], v[7]
		// speed is -1 or unreadable (EINVAL) for veth, lo, tun, and links
		// that are down.
		c.speed = -1
		if b, err := os.ReadFile(filepath.Join(dir, "speed")); err == nil {
			if sp, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil {
				c.speed = sp
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "ifindex")); err == nil {
			if ix, err := parseUint(b); err == nil && ix < 1<<31 {
				c.ifindex = int(ix)
			}
		}
		s.nics[name] = c
	}
	if r.qdiscs != nil && len(s.nics) > 0 {
		q, err := r.qdiscs()
		if err != nil {
			s.missing = append(s.missing, fmt.Sprintf("qdisc statistics: %v", err))
			return nil
		}
		s.qdisc = map[string]QdiscStats{}
		for name, c := range s.nics {
			if st, ok := q[c.ifindex]; ok && c.ifindex > 0 {
				s.qdisc[name] = st
			}
		}
	}
	return nil
}

// readBroker counts the broker's open files and reads its limit. A
// broker that is gone is a note, not an error.
func (r *Reader) readBroker(s *Snapshot) error {
	pid := strconv.Itoa(r.cfg.PID)
	f, err := os.Open(r.proc(pid, "fd"))
	if err != nil {
		s.missing = append(s.missing, fmt.Sprintf("broker pid %s: %v", pid, err))
		return nil
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		s.missing = append(s.missing, fmt.Sprintf("broker pid %s: %v", pid, err))
		return nil
	}
	b := &brokerRaw{pid: r.cfg.PID, open: int64(len(names)), limit: -1}
	p := r.proc(pid, "limits")
	if data, err := os.ReadFile(p); err == nil {
		if b.limit, err = parseOpenFilesLimit(data); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	s.broker = b
	return nil
}
