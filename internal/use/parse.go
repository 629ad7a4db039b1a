package use

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The parsers take a file's bytes and return what kscope uses of it, or
// an error saying which line is wrong. They never panic, whatever the
// input (FuzzParsers).

// maxCPUs bounds the CPU numbers accepted from /proc/stat and
// /proc/schedstat (the kernel's NR_CPUS is at most 8192).
const maxCPUs = 8192

// cpuTimes are one cpu line of /proc/stat, in clock ticks: user nice
// system idle iowait irq softirq steal (guest and guest_nice are already
// in user and nice, so they are not read).
type cpuTimes [8]uint64

func (c cpuTimes) total() uint64 {
	var t uint64
	for _, v := range c {
		t += v
	}
	return t
}

const (
	ctUser = iota
	ctNice
	ctSystem
	ctIdle
	ctIowait
	ctIRQ
	ctSoftIRQ
	ctSteal
)

// procStat is what kscope reads of /proc/stat.
type procStat struct {
	total        cpuTimes
	cpus         map[int]cpuTimes
	procsRunning int64
	procsBlocked int64
}

func parseProcStat(b []byte) (*procStat, error) {
	st := &procStat{cpus: map[int]cpuTimes{}}
	seenTotal := false
	err := eachLine(b, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 {
			return nil
		}
		switch {
		case strings.HasPrefix(f[0], "cpu"):
			if len(f) < 5 {
				return fmt.Errorf("line %d: %q: want at least 4 times", n, f[0])
			}
			var ct cpuTimes
			for i := 0; i < len(ct) && i+1 < len(f); i++ {
				v, err := strconv.ParseUint(f[i+1], 10, 64)
				if err != nil {
					return fmt.Errorf("line %d: %s: %w", n, f[0], err)
				}
				ct[i] = v
			}
			if f[0] == "cpu" {
				st.total, seenTotal = ct, true
				return nil
			}
			id, err := strconv.Atoi(f[0][3:])
			if err != nil || id < 0 || id >= maxCPUs {
				return fmt.Errorf("line %d: bad cpu %q", n, f[0])
			}
			st.cpus[id] = ct
		case f[0] == "procs_running" || f[0] == "procs_blocked":
			if len(f) != 2 {
				return fmt.Errorf("line %d: %s: want one value", n, f[0])
			}
			v, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || v < 0 {
				return fmt.Errorf("line %d: %s: bad value %q", n, f[0], f[1])
			}
			if f[0] == "procs_running" {
				st.procsRunning = v
			} else {
				st.procsBlocked = v
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seenTotal {
		return nil, errors.New("no cpu line")
	}
	return st, nil
}

// loadAvg is /proc/loadavg: "0.20 0.18 0.12 1/80 11206".
type loadAvg struct {
	load1   float64
	running int64
}

func parseLoadAvg(b []byte) (loadAvg, error) {
	f := strings.Fields(string(b))
	if len(f) < 4 {
		return loadAvg{}, fmt.Errorf("want 5 fields, got %d", len(f))
	}
	l1, err := strconv.ParseFloat(f[0], 64)
	if err != nil || l1 < 0 || math.IsInf(l1, 0) || math.IsNaN(l1) {
		return loadAvg{}, fmt.Errorf("bad load %q", f[0])
	}
	run, _, ok := strings.Cut(f[3], "/")
	r, err := strconv.ParseInt(run, 10, 64)
	if !ok || err != nil || r < 0 {
		return loadAvg{}, fmt.Errorf("bad running/total %q", f[3])
	}
	return loadAvg{load1: l1, running: r}, nil
}

// psiLine is one line of a /proc/pressure file; total is in µs.
type psiLine struct {
	avg10 float64
	total uint64
}

// psi is a /proc/pressure file; hasFull is false where the kernel
// writes no full line (cpu before 5.13).
type psi struct {
	some, full psiLine
	hasFull    bool
}

func parsePSI(b []byte) (*psi, error) {
	p := &psi{}
	seenSome := false
	err := eachLine(b, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 {
			return nil
		}
		var dst *psiLine
		switch f[0] {
		case "some":
			dst, seenSome = &p.some, true
		case "full":
			dst, p.hasFull = &p.full, true
		default:
			return fmt.Errorf("line %d: unknown %q", n, f[0])
		}
		seenAvg, seenTotal := false, false
		for _, kv := range f[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return fmt.Errorf("line %d: bad field %q", n, kv)
			}
			switch k {
			case "avg10":
				a, err := strconv.ParseFloat(v, 64)
				if err != nil || a < 0 || a > 100 {
					return fmt.Errorf("line %d: bad avg10 %q", n, v)
				}
				dst.avg10, seenAvg = a, true
			case "total":
				t, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return fmt.Errorf("line %d: bad total %q", n, v)
				}
				dst.total, seenTotal = t, true
			}
		}
		if !seenAvg || !seenTotal {
			return fmt.Errorf("line %d: no avg10 or total", n)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !seenSome {
		return nil, errors.New("no some line")
	}
	return p, nil
}

// parseKeyValues parses "Name: value [kB]" (meminfo) or "name value"
// (vmstat) lines. With kB the values of lines in kB are made bytes.
func parseKeyValues(b []byte, sep string) (map[string]int64, error) {
	m := map[string]int64{}
	err := eachLine(b, func(n int, line string) error {
		if strings.TrimSpace(line) == "" {
			return nil
		}
		var k, rest string
		if sep == ":" {
			var ok bool
			k, rest, ok = strings.Cut(line, ":")
			if !ok {
				return fmt.Errorf("line %d: no ':'", n)
			}
		} else {
			f := strings.Fields(line)
			if len(f) != 2 {
				return fmt.Errorf("line %d: want name and value", n)
			}
			k, rest = f[0], f[1]
		}
		f := strings.Fields(rest)
		if len(f) == 0 || len(f) > 2 || len(f) == 2 && f[1] != "kB" {
			return fmt.Errorf("line %d: %s: bad value %q", n, k, rest)
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			// vmstat counters are unsigned longs.
			u, uerr := strconv.ParseUint(f[0], 10, 64)
			if uerr != nil {
				return fmt.Errorf("line %d: %s: %w", n, k, err)
			}
			v = int64(u & math.MaxInt64)
		}
		if len(f) == 2 {
			if v > math.MaxInt64/1024 || v < 0 {
				return fmt.Errorf("line %d: %s: %d kB out of range", n, k, v)
			}
			v *= 1024
		}
		m[strings.TrimSpace(k)] = v
		return nil
	})
	return m, err
}

// diskCounters are one /proc/diskstats line (kernel 4.18+ has 17 or 19
// numbers after the name; 2.6 has 11). Times are in ms, sizes in 512-byte
// sectors.
type diskCounters struct {
	major, minor            uint32
	reads, readSectors      uint64
	readMs                  uint64
	writes, writeSectors    uint64
	writeMs                 uint64
	inFlight                uint64
	ioTicks, weightedMs     uint64
	discards, discardMs     uint64
	flushes, flushMs        uint64
	hasDiscards, hasFlushes bool
}

func parseDiskstats(b []byte) (map[string]diskCounters, error) {
	m := map[string]diskCounters{}
	err := eachLine(b, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 {
			return nil
		}
		if len(f) < 14 {
			return fmt.Errorf("line %d: %d fields, want at least 14", n, len(f))
		}
		maj, err1 := strconv.ParseUint(f[0], 10, 32)
		mnr, err2 := strconv.ParseUint(f[1], 10, 32)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("line %d: bad device number %s:%s", n, f[0], f[1])
		}
		var v [17]uint64
		for i := 3; i < len(f) && i-3 < len(v); i++ {
			x, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return fmt.Errorf("line %d: %s: field %d: %w", n, f[2], i+1, err)
			}
			v[i-3] = x
		}
		d := diskCounters{major: uint32(maj), minor: uint32(mnr),
			reads: v[0], readSectors: v[2], readMs: v[3], writes: v[4], writeSectors: v[6], writeMs: v[7],
			inFlight: v[8], ioTicks: v[9], weightedMs: v[10]}
		if len(f) >= 18 {
			d.discards, d.discardMs, d.hasDiscards = v[11], v[14], true
		}
		if len(f) >= 20 {
			d.flushes, d.flushMs, d.hasFlushes = v[15], v[16], true
		}
		m[f[2]] = d
		return nil
	})
	return m, err
}

// parseSNMP parses /proc/net/snmp and /proc/net/netstat: pairs of lines
// "Proto: names..." and "Proto: values..." into proto → name → value.
func parseSNMP(b []byte) (map[string]map[string]int64, error) {
	out := map[string]map[string]int64{}
	var header []string
	var headerProto string
	err := eachLine(b, func(n int, line string) error {
		proto, rest, ok := strings.Cut(line, ":")
		if !ok {
			if strings.TrimSpace(line) == "" {
				return nil
			}
			return fmt.Errorf("line %d: no ':'", n)
		}
		f := strings.Fields(rest)
		if header == nil {
			header, headerProto = f, proto
			return nil
		}
		if proto != headerProto {
			return fmt.Errorf("line %d: values of %s after names of %s", n, proto, headerProto)
		}
		if len(f) != len(header) {
			return fmt.Errorf("line %d: %s: %d values for %d names", n, proto, len(f), len(header))
		}
		m := map[string]int64{}
		for i, name := range header {
			v, err := strconv.ParseInt(f[i], 10, 64)
			if err != nil {
				u, uerr := strconv.ParseUint(f[i], 10, 64)
				if uerr != nil {
					return fmt.Errorf("line %d: %s %s: %w", n, proto, name, err)
				}
				v = int64(u & math.MaxInt64)
			}
			m[name] = v
		}
		out[proto] = m
		header = nil
		return nil
	})
	if err != nil {
		return nil, err
	}
	if header != nil {
		return nil, fmt.Errorf("%s: names without values", headerProto)
	}
	return out, nil
}

// parseFileNr parses /proc/sys/fs/file-nr: allocated, unused, max.
func parseFileNr(b []byte) (open, max int64, err error) {
	f := strings.Fields(string(b))
	if len(f) != 3 {
		return 0, 0, fmt.Errorf("want 3 numbers, got %d fields", len(f))
	}
	var v [3]int64
	for i := range v {
		if v[i], err = strconv.ParseInt(f[i], 10, 64); err != nil || v[i] < 0 {
			return 0, 0, fmt.Errorf("bad number %q", f[i])
		}
	}
	return v[0] - v[1], v[2], nil
}

// parseOpenFilesLimit returns the soft "Max open files" of a
// /proc/PID/limits file, -1 for unlimited.
func parseOpenFilesLimit(b []byte) (int64, error) {
	var soft int64
	found := false
	err := eachLine(b, func(n int, line string) error {
		rest, ok := strings.CutPrefix(line, "Max open files")
		if !ok {
			return nil
		}
		f := strings.Fields(rest)
		if len(f) < 2 {
			return fmt.Errorf("line %d: want soft and hard limits", n)
		}
		found = true
		if f[0] == "unlimited" {
			soft = -1
			return nil
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("line %d: bad soft limit %q", n, f[0])
		}
		soft = v
		return nil
	})
	if err != nil {
		return 0, err
	}
	if !found {
		return 0, errors.New("no Max open files line")
	}
	return soft, nil
}

// parseSchedstat returns each CPU's run_delay (ns waited on its run
// queue) from /proc/schedstat (version 15+: "cpuN" and 9 numbers, of
// which the 8th is run_delay).
func parseSchedstat(b []byte) (map[int]uint64, error) {
	m := map[int]uint64{}
	err := eachLine(b, func(n int, line string) error {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], "cpu") {
			return nil
		}
		if len(f) < 9 {
			return fmt.Errorf("line %d: %s: %d fields, want at least 9", n, f[0], len(f))
		}
		id, err := strconv.Atoi(f[0][3:])
		if err != nil || id < 0 || id >= maxCPUs {
			return fmt.Errorf("line %d: bad cpu %q", n, f[0])
		}
		v, err := strconv.ParseUint(f[8], 10, 64)
		if err != nil {
			return fmt.Errorf("line %d: %s run_delay: %w", n, f[0], err)
		}
		m[id] = v
		return nil
	})
	return m, err
}

// parseUint parses a one-number sysfs or procfs file.
func parseUint(b []byte) (uint64, error) {
	return strconv.ParseUint(string(bytes.TrimSpace(b)), 10, 64)
}

// eachLine calls fn for each line, numbered from 1.
func eachLine(b []byte, fn func(n int, line string) error) error {
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20) // /proc/stat's intr line is long
	n := 0
	for sc.Scan() {
		n++
		if err := fn(n, sc.Text()); err != nil {
			return err
		}
	}
	return sc.Err()
}
