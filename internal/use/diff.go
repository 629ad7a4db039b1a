package use

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// counterDelta is cur − prev of a kernel counter. A counter that went
// backwards was reset (a device or interface made again, a qdisc
// replaced) or wrapped: a 32-bit counter that wrapped gives the distance
// across 2^32 when that is plausible (under 2^30); anything else gives 0
// and false, never a negative or huge value.
func counterDelta(prev, cur uint64) (uint64, bool) {
	if cur >= prev {
		return cur - prev, true
	}
	if prev <= math.MaxUint32 {
		if d := (math.MaxUint32 - prev) + cur + 1; d < 1<<30 {
			return d, true
		}
	}
	return 0, false
}

// deltas collects counter deltas and remembers the resets for a note.
type deltas struct{ reset bool }

func (d *deltas) of(prev, cur uint64) uint64 {
	v, ok := counterDelta(prev, cur)
	if !ok {
		d.reset = true
	}
	return v
}

func (d *deltas) signed(prev, cur int64) int64 {
	if prev < 0 || cur < 0 {
		return 0
	}
	return int64(min(d.of(uint64(prev), uint64(cur)), math.MaxInt64))
}

func pct(part, whole float64) float64 {
	if !(whole > 0) {
		return 0
	}
	return clamp(100*part/whole, 0, 100)
}

func clamp(v, lo, hi float64) float64 {
	if math.IsNaN(v) {
		return lo
	}
	return min(max(v, lo), hi)
}

func ptr[T any](v T) *T { return &v }

// Diff makes the Sample of the interval from prev to cur, with its
// verdict. The run queue is cur's procs_running (a Sampler averages
// polls instead) and there is no await baseline.
func Diff(prev, cur *Snapshot, th Thresholds) (*Sample, error) {
	s, err := diff(prev, cur)
	if err != nil {
		return nil, err
	}
	s.Verdict = Verdict(s, th)
	return s, nil
}

// diff computes every figure of the interval but the verdict.
func diff(prev, cur *Snapshot) (*Sample, error) {
	dt := cur.Time.Sub(prev.Time)
	if dt <= 0 {
		return nil, fmt.Errorf("snapshots not in order: %v to %v", prev.Time, cur.Time)
	}
	s := &Sample{Time: cur.Time, IntervalS: dt.Seconds(), Disks: []Disk{}, NICs: []NIC{}}
	note := func(format string, args ...any) { s.Notes = append(s.Notes, fmt.Sprintf(format, args...)) }
	s.CPU = diffCPU(prev, cur, dt, note)
	s.Memory = diffMemory(prev, cur, dt, note)
	s.IOPSI = stall(prev.psi["io"], cur.psi["io"], dt)
	s.Disks = diffDisks(prev, cur, dt, note)
	s.NICs = diffNICs(prev, cur, dt, note)
	s.TCP = diffTCP(prev, cur, note)
	s.FDs = fds(cur)
	return s, nil
}

// stall is the share of dt stalled, from the PSI totals (µs).
func stall(prev, cur *psi, dt time.Duration) *Stall {
	if prev == nil || cur == nil {
		return nil
	}
	us := float64(dt.Microseconds())
	var d deltas
	st := &Stall{SomePct: pct(float64(d.of(prev.some.total, cur.some.total)), us), SomeAvg10Pct: cur.some.avg10}
	if prev.hasFull && cur.hasFull {
		st.FullPct = ptr(pct(float64(d.of(prev.full.total, cur.full.total)), us))
		st.FullAvg10Pct = ptr(cur.full.avg10)
	}
	return st
}

func diffCPU(prev, cur *Snapshot, dt time.Duration, note func(string, ...any)) CPU {
	c := CPU{CPUs: len(cur.stat.cpus), Load1: cur.load.load1, Blocked: float64(cur.stat.procsBlocked)}
	if c.CPUs == 0 {
		c.CPUs = 1
	}
	// The sampler is running while it reads procs_running.
	c.RunQueue = float64(max(cur.stat.procsRunning-1, 0))
	var d deltas
	times := func(p, q cpuTimes) (dd cpuTimes, total float64) {
		for i := range dd {
			dd[i] = d.of(p[i], q[i])
			total += float64(dd[i])
		}
		return dd, total
	}
	dd, total := times(prev.stat.total, cur.stat.total)
	if total > 0 {
		c.UtilPct = pct(total-float64(dd[ctIdle]+dd[ctIowait]), total)
		c.UserPct = pct(float64(dd[ctUser]+dd[ctNice]), total)
		c.SystemPct = pct(float64(dd[ctSystem]), total)
		c.IRQPct = pct(float64(dd[ctIRQ]+dd[ctSoftIRQ]), total)
		c.IowaitPct = pct(float64(dd[ctIowait]), total)
		c.StealPct = pct(float64(dd[ctSteal]), total)
	}
	ids := make([]int, 0, len(cur.stat.cpus))
	for id := range cur.stat.cpus {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	for _, id := range ids {
		p, ok := prev.stat.cpus[id]
		if !ok {
			continue // came online in the interval
		}
		dd, total := times(p, cur.stat.cpus[id])
		one := CPUOne{CPU: id}
		if total > 0 {
			one.UtilPct = pct(total-float64(dd[ctIdle]+dd[ctIowait]), total)
			one.IowaitPct = pct(float64(dd[ctIowait]), total)
			one.StealPct = pct(float64(dd[ctSteal]), total)
		}
		if prev.sched != nil && cur.sched != nil {
			if a, ok := prev.sched[id]; ok {
				if b, ok := cur.sched[id]; ok {
					// ns waited per ns of the interval: tasks waiting.
					one.RunDelay = ptr(float64(d.of(a, b)) / float64(dt.Nanoseconds()))
				}
			}
		}
		c.PerCPU = append(c.PerCPU, one)
	}
	if d.reset {
		note("cpu times went backwards (counted 0)")
	}
	c.PSI = stall(prev.psi["cpu"], cur.psi["cpu"], dt)
	return c
}

func diffMemory(prev, cur *Snapshot, dt time.Duration, note func(string, ...any)) Memory {
	m := cur.mem
	mem := Memory{TotalBytes: m["MemTotal"], CachedBytes: m["Cached"], DirtyBytes: m["Dirty"], WritebackBytes: m["Writeback"]}
	avail, ok := m["MemAvailable"]
	if !ok { // before Linux 3.14
		avail = m["MemFree"] + m["Cached"]
	}
	mem.AvailableBytes = avail
	if mem.TotalBytes > 0 {
		mem.UsedPct = clamp(100*(1-float64(avail)/float64(mem.TotalBytes)), 0, 100)
	}
	// The kernel's global dirty thresholds (mm/page-writeback.c,
	// domain_dirty_limits), approximately: vm.dirty_bytes, else
	// vm.dirty_ratio of the dirtyable memory (free and file pages).
	dirtyable := m["MemFree"] + m["Active(file)"] + m["Inactive(file)"]
	limit := func(bytesKey, ratioKey string) int64 {
		if v := cur.sysctl[bytesKey]; v > 0 {
			return v
		}
		if r, ok := cur.sysctl[ratioKey]; ok {
			return dirtyable / 100 * r
		}
		return 0
	}
	mem.DirtyLimitBytes = limit("dirty_bytes", "dirty_ratio")
	mem.DirtyBackgroundBytes = limit("dirty_background_bytes", "dirty_background_ratio")
	if mem.DirtyBackgroundBytes >= mem.DirtyLimitBytes { // the kernel halves it then
		mem.DirtyBackgroundBytes = mem.DirtyLimitBytes / 2
	}
	mem.DirtyThrottleBytes = (mem.DirtyLimitBytes + mem.DirtyBackgroundBytes) / 2
	var d deltas
	vm := func(key string) *int64 {
		if prev.vm == nil || cur.vm == nil {
			return nil
		}
		a, ok1 := prev.vm[key]
		b, ok2 := cur.vm[key]
		if !ok1 || !ok2 {
			return nil
		}
		return ptr(d.signed(a, b))
	}
	mem.SwapInPages, mem.SwapOutPages = vm("pswpin"), vm("pswpout")
	mem.DirectScanPages, mem.OOMKills = vm("pgscan_direct"), vm("oom_kill")
	if d.reset {
		note("vmstat counters went backwards (counted 0)")
	}
	mem.PSI = stall(prev.psi["memory"], cur.psi["memory"], dt)
	return mem
}

func diffDisks(prev, cur *Snapshot, dt time.Duration, note func(string, ...any)) []Disk {
	names := make([]string, 0, len(cur.disks))
	for n := range cur.disks {
		names = append(names, n)
	}
	sort.Strings(names)
	ms := float64(dt.Microseconds()) / 1000
	sec := dt.Seconds()
	out := []Disk{}
	for _, name := range names {
		c := cur.disks[name]
		dev := fmt.Sprintf("%d:%d", c.major, c.minor)
		p, ok := prev.disks[name]
		if !ok || p.major != c.major || p.minor != c.minor {
			continue // new in the interval: rates from the next one
		}
		var d deltas
		reads, writes := d.of(p.reads, c.reads), d.of(p.writes, c.writes)
		ios := float64(reads + writes)
		waitMs := float64(d.of(p.readMs, c.readMs) + d.of(p.writeMs, c.writeMs))
		if c.hasDiscards && p.hasDiscards {
			ios += float64(d.of(p.discards, c.discards))
			waitMs += float64(d.of(p.discardMs, c.discardMs))
		}
		k := Disk{Name: name, Dev: dev,
			UtilPct:   pct(float64(d.of(p.ioTicks, c.ioTicks)), ms),
			AvgQueue:  float64(d.of(p.weightedMs, c.weightedMs)) / ms,
			ReadBps:   float64(d.of(p.readSectors, c.readSectors)) * 512 / sec,
			WriteBps:  float64(d.of(p.writeSectors, c.writeSectors)) * 512 / sec,
			ReadIOPS:  float64(reads) / sec,
			WriteIOPS: float64(writes) / sec,
			InFlight:  int64(min(c.inFlight, math.MaxInt32)),
		}
		if ios > 0 {
			k.AwaitMs = ptr(waitMs / ios)
		}
		for key, v := range cur.throttles {
			if key.dev != dev {
				continue
			}
			pv, ok := prev.throttles[key]
			if !ok {
				continue
			}
			rate := float64(d.of(pv.count, v.count)) / sec
			k.Throttles = append(k.Throttles, Throttle{Cgroup: key.cgroup, Limit: key.limit, Max: float64(v.max), Rate: rate,
				Pct: 100 * rate / float64(v.max)})
		}
		sort.Slice(k.Throttles, func(i, j int) bool {
			a, b := k.Throttles[i], k.Throttles[j]
			return a.Cgroup < b.Cgroup || a.Cgroup == b.Cgroup && a.Limit < b.Limit
		})
		if d.reset {
			note("disk %s: counters went backwards (counted 0)", name)
		}
		out = append(out, k)
	}
	return out
}

func diffNICs(prev, cur *Snapshot, dt time.Duration, note func(string, ...any)) []NIC {
	names := make([]string, 0, len(cur.nics))
	for n := range cur.nics {
		names = append(names, n)
	}
	sort.Strings(names)
	sec := dt.Seconds()
	out := []NIC{}
	for _, name := range names {
		c := cur.nics[name]
		p, ok := prev.nics[name]
		if !ok || p.ifindex != c.ifindex {
			continue // new, or made again, in the interval
		}
		var d deltas
		n := NIC{Name: name,
			RxBps: float64(d.of(p.rxBytes, c.rxBytes)) / sec, TxBps: float64(d.of(p.txBytes, c.txBytes)) / sec,
			RxPackets: int64(d.of(p.rxPackets, c.rxPackets)), TxPackets: int64(d.of(p.txPackets, c.txPackets)),
			RxDrops: int64(d.of(p.rxDropped, c.rxDropped)), TxDrops: int64(d.of(p.txDropped, c.txDropped)),
			RxErrors: int64(d.of(p.rxErrors, c.rxErrors)), TxErrors: int64(d.of(p.txErrors, c.txErrors)),
		}
		if c.speed > 0 {
			n.SpeedMbps = ptr(c.speed)
			n.UtilPct = ptr(pct(max(n.RxBps, n.TxBps)*8, float64(c.speed)*1e6))
		}
		if cq, ok := cur.qdisc[name]; !ok && cur.qdisc != nil && prev.qdisc != nil {
			// Not dumped: the builtin noqueue (veth, tunnels) or noop,
			// which queue nothing and so drop nothing.
			n.Qdisc, n.QdiscDrops, n.QdiscOverlimits, n.QdiscBacklog = "noqueue", ptr(int64(0)), ptr(int64(0)), ptr(int64(0))
		} else if ok {
			n.Qdisc = cq.Kind
			n.QdiscBacklog = ptr(int64(min(cq.Backlog, math.MaxInt64)))
			if pq, ok := prev.qdisc[name]; ok && pq.Kind == cq.Kind {
				n.QdiscDrops = ptr(int64(d.of(pq.Drops, cq.Drops)))
				n.QdiscOverlimits = ptr(int64(d.of(pq.Overlimits, cq.Overlimits)))
			}
		}
		if d.reset {
			note("nic %s: counters went backwards (counted 0)", name)
		}
		out = append(out, n)
	}
	return out
}

func diffTCP(prev, cur *Snapshot, note func(string, ...any)) *TCP {
	if prev.snmp == nil || cur.snmp == nil || prev.snmp["Tcp"] == nil || cur.snmp["Tcp"] == nil {
		return nil
	}
	p, c := prev.snmp["Tcp"], cur.snmp["Tcp"]
	var d deltas
	t := &TCP{OutSegs: d.signed(p["OutSegs"], c["OutSegs"]), RetransSegs: d.signed(p["RetransSegs"], c["RetransSegs"]),
		InErrs: d.signed(p["InErrs"], c["InErrs"]), OutRsts: d.signed(p["OutRsts"], c["OutRsts"]), CurrEstab: max(c["CurrEstab"], 0)}
	if t.OutSegs > 0 {
		// OutSegs counts only segments with new data (or none: ACKs),
		// not retransmissions (tcp_output.c counts it when end_seq is
		// past snd_nxt), so this can exceed 100% on a lossy link.
		t.RetransPct = ptr(100 * float64(t.RetransSegs) / float64(t.OutSegs))
	}
	if prev.net != nil && cur.net != nil && prev.net["TcpExt"] != nil && cur.net["TcpExt"] != nil {
		pe, ce := prev.net["TcpExt"], cur.net["TcpExt"]
		t.ListenOverflows = d.signed(pe["ListenOverflows"], ce["ListenOverflows"])
		t.ListenDrops = d.signed(pe["ListenDrops"], ce["ListenDrops"])
	}
	if d.reset {
		note("tcp counters went backwards (counted 0)")
	}
	return t
}

func fds(cur *Snapshot) FDs {
	f := FDs{SystemOpen: cur.fileOpen, SystemMax: cur.fileMax}
	if f.SystemMax > 0 {
		f.SystemPct = pct(float64(f.SystemOpen), float64(f.SystemMax))
	}
	if b := cur.broker; b != nil {
		bf := &BrokerFDs{PID: b.pid, Open: b.open}
		if b.limit >= 0 {
			bf.Limit = ptr(b.limit)
			if b.limit > 0 {
				bf.Pct = ptr(clamp(100*float64(b.open)/float64(b.limit), 0, 100))
			}
		}
		f.Broker = bf
	}
	return f
}

// fmtBytes formats a byte count or rate: 512B, 4.0KB, 1.2MB, 3.4GB.
func fmtBytes(v float64) string {
	units := []string{"B", "KB", "MB", "GB", "TB"}
	i := 0
	for v >= 1000 && i < len(units)-1 {
		v /= 1000
		i++
	}
	if i == 0 {
		return strconv.FormatFloat(v, 'f', 0, 64) + "B"
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + units[i]
}

// fmtPct formats a percentage.
func fmtPct(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) + "%" }
