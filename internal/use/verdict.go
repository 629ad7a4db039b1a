package use

import (
	"fmt"
	"strings"
)

// Thresholds decide the verdict. Each is documented with its default
// (DefaultThresholds) and the reason for it; docs/use.md has the table.
type Thresholds struct {
	// CPU: saturated when the run queue exceeds RunQueuePerCPU × CPUs
	// (tasks wait for a CPU), when PSI cpu some exceeds CPUPSIPct (some
	// task waited that share of the interval), or when a CPU's run delay
	// (schedstat) exceeds RunDelay tasks waiting on average. Busy when
	// utilization is at least CPUUtilPct (all CPUs, or one of them).
	RunQueuePerCPU float64 // 1
	CPUPSIPct      float64 // 10
	RunDelay       float64 // 1
	CPUUtilPct     float64 // 90

	// Memory: saturated when PSI memory some exceeds MemPSIPct, when
	// Dirty + Writeback reach the point where the kernel throttles
	// writers, or when it swaps or reclaims directly (allocations
	// wait). Busy when less than MemAvailPct is available. OOM kills
	// are errors.
	MemPSIPct   float64 // 10
	MemAvailPct float64 // 5

	// Disks: saturated when utilization is at least DiskUtilPct, when the
	// average queue exceeds DiskQueue while await is at least
	// DiskAwaitFactor × the device's best await of the run (requests
	// queue instead of being served), when a cgroup uses at least
	// ThrottlePct of a limit on the device, or, for the devices with I/O
	// in the interval, when PSI io full exceeds IOPSIFullPct.
	DiskUtilPct     float64 // 90
	DiskQueue       float64 // 1
	DiskAwaitFactor float64 // 2
	ThrottlePct     float64 // 90
	IOPSIFullPct    float64 // 10

	// NICs: saturated at NICUtilPct of the link speed or with any drop
	// (interface or qdisc) in the interval; interface errors are
	// errors.
	NICUtilPct float64 // 90

	// TCP: saturated when retransmitted segments exceed TCPRetransPct of
	// the segments sent, and are at least TCPRetransMin (one retransmit
	// among a few dozen segments is noise), or when the accept queue
	// overflowed; InErrs are errors.
	TCPRetransPct float64 // 1
	TCPRetransMin float64 // 5

	// File descriptors: busy at FDPct of the broker's limit or of the
	// system's file-max (beyond it, opens fail with EMFILE/ENFILE).
	FDPct float64 // 90
}

// DefaultThresholds are the thresholds of `kscope use`.
var DefaultThresholds = Thresholds{
	RunQueuePerCPU: 1, CPUPSIPct: 10, RunDelay: 1, CPUUtilPct: 90,
	MemPSIPct: 10, MemAvailPct: 5,
	DiskUtilPct: 90, DiskQueue: 1, DiskAwaitFactor: 2, ThrottlePct: 90, IOPSIFullPct: 10,
	NICUtilPct: 90, TCPRetransPct: 1, TCPRetransMin: 5, FDPct: 90,
}

// withDefaults fills zero fields from DefaultThresholds.
func (t Thresholds) withDefaults() Thresholds {
	d := DefaultThresholds
	for _, f := range []struct{ v, def *float64 }{
		{&t.RunQueuePerCPU, &d.RunQueuePerCPU}, {&t.CPUPSIPct, &d.CPUPSIPct}, {&t.RunDelay, &d.RunDelay}, {&t.CPUUtilPct, &d.CPUUtilPct},
		{&t.MemPSIPct, &d.MemPSIPct}, {&t.MemAvailPct, &d.MemAvailPct},
		{&t.DiskUtilPct, &d.DiskUtilPct}, {&t.DiskQueue, &d.DiskQueue}, {&t.DiskAwaitFactor, &d.DiskAwaitFactor},
		{&t.ThrottlePct, &d.ThrottlePct}, {&t.IOPSIFullPct, &d.IOPSIFullPct},
		{&t.NICUtilPct, &d.NICUtilPct}, {&t.TCPRetransPct, &d.TCPRetransPct}, {&t.TCPRetransMin, &d.TCPRetransMin}, {&t.FDPct, &d.FDPct},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return t
}

// Verdict names the resources of s past the thresholds: one finding per
// resource and kind, its reasons joined, and the line.
func Verdict(s *Sample, th Thresholds) VerdictOf {
	th = th.withDefaults()
	var fs findings
	fs.cpu(&s.CPU, th)
	fs.memory(&s.Memory, th)
	fs.disks(s, th)
	fs.nics(s.NICs, th)
	fs.tcp(s.TCP, th)
	fs.fds(&s.FDs, th)
	return VerdictOf{Findings: fs, Line: verdictLine(fs)}
}

// findings collects a verdict's findings, a resource at a time.
type findings []Finding

// add adds a finding of kind for resource when it has reasons.
func (fs *findings) add(resource, kind string, reasons []string) {
	if len(reasons) > 0 {
		*fs = append(*fs, Finding{Resource: resource, Kind: kind, Reason: strings.Join(reasons, ", ")})
	}
}

func (fs *findings) cpu(c *CPU, th Thresholds) {
	var sat, busy []string
	if c.RunQueue > th.RunQueuePerCPU*float64(c.CPUs) {
		sat = append(sat, fmt.Sprintf("run queue %.1f > %d CPUs", c.RunQueue, c.CPUs))
	}
	if c.PSI != nil && c.PSI.SomePct > th.CPUPSIPct {
		sat = append(sat, "PSI cpu some "+fmtPct(c.PSI.SomePct))
	}
	for _, one := range c.PerCPU {
		if one.RunDelay != nil && *one.RunDelay > th.RunDelay {
			sat = append(sat, fmt.Sprintf("cpu%d run delay %.1f", one.CPU, *one.RunDelay))
		}
	}
	if c.UtilPct >= th.CPUUtilPct {
		busy = append(busy, fmtPct(c.UtilPct)+" busy")
	} else {
		for _, one := range c.PerCPU {
			if one.UtilPct >= th.CPUUtilPct {
				busy = append(busy, fmt.Sprintf("cpu%d %s busy", one.CPU, fmtPct(one.UtilPct)))
			}
		}
	}
	fs.add("cpu", KindSaturation, sat)
	fs.add("cpu", KindUtilization, busy)
}

func (fs *findings) memory(m *Memory, th Thresholds) {
	var sat, busy []string
	if m.PSI != nil && m.PSI.SomePct > th.MemPSIPct {
		sat = append(sat, "PSI memory some "+fmtPct(m.PSI.SomePct))
	}
	if m.DirtyThrottleBytes > 0 && m.DirtyBytes+m.WritebackBytes >= m.DirtyThrottleBytes {
		sat = append(sat, fmt.Sprintf("dirty+writeback %s >= %s (writers throttled)",
			fmtBytes(float64(m.DirtyBytes+m.WritebackBytes)), fmtBytes(float64(m.DirtyThrottleBytes))))
	}
	if n := deref(m.SwapInPages) + deref(m.SwapOutPages); n > 0 {
		sat = append(sat, fmt.Sprintf("swapping %d pages", n))
	}
	if n := deref(m.DirectScanPages); n > 0 {
		sat = append(sat, fmt.Sprintf("direct reclaim scanned %d pages", n))
	}
	if m.TotalBytes > 0 && m.UsedPct >= 100-th.MemAvailPct {
		busy = append(busy, fmtPct(100-m.UsedPct)+" available")
	}
	fs.add("memory", KindSaturation, sat)
	fs.add("memory", KindUtilization, busy)
	if n := deref(m.OOMKills); n > 0 {
		fs.add("memory", KindErrors, []string{fmt.Sprintf("%d OOM kills", n)})
	}
}

// disks: PSI io full is for all of them, so it goes to those that did I/O
// in the interval (or to "io" when none did).
func (fs *findings) disks(s *Sample, th Thresholds) {
	ioFull := s.IOPSI != nil && s.IOPSI.FullPct != nil && *s.IOPSI.FullPct > th.IOPSIFullPct
	ioNamed := false
	for _, d := range s.Disks {
		var sat []string
		if d.UtilPct >= th.DiskUtilPct {
			sat = append(sat, "util "+fmtPct(d.UtilPct))
		}
		if d.AvgQueue > th.DiskQueue && d.AwaitMs != nil && d.AwaitBestMs != nil && *d.AwaitBestMs > 0 &&
			*d.AwaitMs >= th.DiskAwaitFactor**d.AwaitBestMs {
			sat = append(sat, fmt.Sprintf("queue %.1f, await %.1fms vs best %.1fms", d.AvgQueue, *d.AwaitMs, *d.AwaitBestMs))
		}
		for _, t := range d.Throttles {
			if t.Pct >= th.ThrottlePct {
				sat = append(sat, fmt.Sprintf("cgroup %s at %s of %s", t.Cgroup, fmtPct(t.Pct), throttleLabel(t)))
			}
		}
		if ioFull && d.ReadIOPS+d.WriteIOPS > 0 {
			sat = append(sat, "PSI io full "+fmtPct(*s.IOPSI.FullPct))
			ioNamed = true
		}
		fs.add("disk "+d.Name, KindSaturation, sat)
	}
	if ioFull && !ioNamed {
		fs.add("io", KindSaturation, []string{"PSI io full " + fmtPct(*s.IOPSI.FullPct)})
	}
}

func (fs *findings) nics(nics []NIC, th Thresholds) {
	for _, n := range nics {
		var sat []string
		if n.UtilPct != nil && *n.UtilPct >= th.NICUtilPct {
			sat = append(sat, fmt.Sprintf("%s of %d Mb/s", fmtPct(*n.UtilPct), *n.SpeedMbps))
		}
		if q := deref(n.QdiscDrops); n.RxDrops+n.TxDrops+q > 0 {
			sat = append(sat, fmt.Sprintf("drops rx %d tx %d qdisc %d", n.RxDrops, n.TxDrops, q))
		}
		fs.add("nic "+n.Name, KindSaturation, sat)
		if n.RxErrors+n.TxErrors > 0 {
			fs.add("nic "+n.Name, KindErrors, []string{fmt.Sprintf("errors rx %d tx %d", n.RxErrors, n.TxErrors)})
		}
	}
}

func (fs *findings) tcp(t *TCP, th Thresholds) {
	if t == nil {
		return
	}
	var sat []string
	if t.RetransPct != nil && *t.RetransPct > th.TCPRetransPct && float64(t.RetransSegs) >= th.TCPRetransMin {
		sat = append(sat, fmt.Sprintf("retransmits %s of %d segments", fmtPct(*t.RetransPct), t.OutSegs))
	}
	if t.ListenOverflows+t.ListenDrops > 0 {
		sat = append(sat, fmt.Sprintf("accept queue overflows %d, listen drops %d", t.ListenOverflows, t.ListenDrops))
	}
	fs.add("tcp", KindSaturation, sat)
	if t.InErrs > 0 {
		fs.add("tcp", KindErrors, []string{fmt.Sprintf("%d bad segments received", t.InErrs)})
	}
}

func (fs *findings) fds(f *FDs, th Thresholds) {
	var busy []string
	if b := f.Broker; b != nil && b.Pct != nil && *b.Pct >= th.FDPct {
		busy = append(busy, fmt.Sprintf("broker %d of %d", b.Open, *b.Limit))
	}
	if f.SystemMax > 0 && f.SystemPct >= th.FDPct {
		busy = append(busy, fmt.Sprintf("system %d of %d", f.SystemOpen, f.SystemMax))
	}
	fs.add("fds", KindUtilization, busy)
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// verdictLine: "saturated: cpu (…), disk loop3 (…); busy: …; errors: …",
// or "ok: no resource saturated".
func verdictLine(fs []Finding) string {
	var parts []string
	for _, k := range []struct{ kind, label string }{{KindSaturation, "saturated"}, {KindUtilization, "busy"}, {KindErrors, "errors"}} {
		var names []string
		for _, f := range fs {
			if f.Kind == k.kind {
				names = append(names, fmt.Sprintf("%s (%s)", f.Resource, f.Reason))
			}
		}
		if len(names) > 0 {
			parts = append(parts, k.label+": "+strings.Join(names, ", "))
		}
	}
	if len(parts) == 0 {
		return "ok: no resource saturated"
	}
	if !strings.HasPrefix(parts[0], "saturated") {
		parts = append([]string{"no resource saturated"}, parts...)
	}
	return strings.Join(parts, "; ")
}
