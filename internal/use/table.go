package use

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/output"
)

// WriteTable writes one interval as a USE table: a row per resource with
// its utilization, saturation and errors, then the verdict line. "n/a"
// marks what this host cannot measure.
func WriteTable(w io.Writer, s *Sample) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "%s (%.2fs)\n", s.Time.UTC().Format(time.RFC3339), s.IntervalS)
	fmt.Fprintln(tw, "RESOURCE\tUTILIZATION\tSATURATION\tERRORS\tDETAIL")
	t := tableRows{tw}
	for _, resource := range []func(tableRows, *Sample){cpuRows, memoryRow, ioRows, nicRows, tcpRow, fdsRow} {
		resource(t, s)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, n := range s.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", output.Escape(n)); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "verdict: %s\n\n", output.Escape(s.Verdict.Line))
	return err
}

// tableRows writes the rows of a USE table.
type tableRows struct{ tw *tabwriter.Writer }

// row writes one row. Device and interface names come from the host and
// the flags: every column is escaped, as everything printed.
func (t tableRows) row(cols ...string) {
	for i := range cols {
		cols[i] = output.Escape(cols[i])
	}
	fmt.Fprintln(t.tw, strings.Join(cols, "\t"))
}

// cpuRows writes the CPUs in all, then each CPU.
func cpuRows(t tableRows, s *Sample) {
	c := s.CPU
	t.row("cpu", fmtPct(c.UtilPct), fmt.Sprintf("runq %.1f/%d, psi %s", c.RunQueue, c.CPUs, stallText(c.PSI, false)), "-",
		fmt.Sprintf("usr %s sys %s irq %s iowait %s steal %s load1 %.2f blocked %.0f",
			fmtPct(c.UserPct), fmtPct(c.SystemPct), fmtPct(c.IRQPct), fmtPct(c.IowaitPct), fmtPct(c.StealPct), c.Load1, c.Blocked))
	for _, one := range c.PerCPU {
		sat := "-"
		if one.RunDelay != nil {
			sat = fmt.Sprintf("run delay %.2f", *one.RunDelay)
		}
		t.row(fmt.Sprintf("  cpu%d", one.CPU), fmtPct(one.UtilPct), sat, "-",
			fmt.Sprintf("iowait %s steal %s", fmtPct(one.IowaitPct), fmtPct(one.StealPct)))
	}
}

// memoryRow writes memory: used, its pressure, swapping and reclaim, OOM
// kills, and the page cache against the dirty thresholds.
func memoryRow(t tableRows, s *Sample) {
	m := s.Memory
	var msat []string
	msat = append(msat, "psi "+stallText(m.PSI, true))
	if m.SwapInPages != nil {
		msat = append(msat, fmt.Sprintf("swap %d/%d", *m.SwapInPages, *m.SwapOutPages))
	}
	if m.DirectScanPages != nil {
		msat = append(msat, fmt.Sprintf("direct scan %d", *m.DirectScanPages))
	}
	oom := "n/a"
	if m.OOMKills != nil {
		oom = fmt.Sprintf("oom %d", *m.OOMKills)
	}
	t.row("memory", fmtPct(m.UsedPct)+" used", strings.Join(msat, ", "), oom,
		fmt.Sprintf("avail %s cached %s dirty %s writeback %s (throttle at %s)", fmtBytes(float64(m.AvailableBytes)),
			fmtBytes(float64(m.CachedBytes)), fmtBytes(float64(m.DirtyBytes)), fmtBytes(float64(m.WritebackBytes)),
			fmtBytes(float64(m.DirtyThrottleBytes))))
}

// ioRows writes the I/O pressure of all devices, then each disk with its
// queue, await and cgroup I/O limits.
func ioRows(t tableRows, s *Sample) {
	t.row("io", "-", "psi "+stallText(s.IOPSI, true), "-", "all devices (PSI)")
	for _, d := range s.Disks {
		await := "n/a"
		if d.AwaitMs != nil {
			await = fmt.Sprintf("%.2fms", *d.AwaitMs)
		}
		sat := fmt.Sprintf("aqu %.2f, await %s", d.AvgQueue, await)
		for _, th := range d.Throttles {
			sat += fmt.Sprintf(", cgroup %s %s of %s", th.Cgroup, fmtPct(th.Pct), throttleLabel(th))
		}
		t.row("disk "+d.Name, fmtPct(d.UtilPct), sat, "n/a",
			fmt.Sprintf("%s r %s/s %.0f iops, w %s/s %.0f iops, in flight %d", d.Dev, fmtBytes(d.ReadBps), d.ReadIOPS,
				fmtBytes(d.WriteBps), d.WriteIOPS, d.InFlight))
	}
}

// nicRows writes each network interface: throughput against its link
// speed, drops of the interface and its qdisc, errors.
func nicRows(t tableRows, s *Sample) {
	for _, n := range s.NICs {
		util := "n/a (no speed)"
		if n.UtilPct != nil {
			util = fmt.Sprintf("%s of %dMb/s", fmtPct(*n.UtilPct), *n.SpeedMbps)
		}
		q := "qdisc n/a"
		if n.QdiscDrops != nil {
			q = fmt.Sprintf("%s drops %d overlimits %d backlog %s", n.Qdisc, *n.QdiscDrops, deref(n.QdiscOverlimits), fmtBytes(float64(deref(n.QdiscBacklog))))
		}
		t.row("nic "+n.Name, util, fmt.Sprintf("drops rx %d tx %d, %s", n.RxDrops, n.TxDrops, q),
			fmt.Sprintf("rx %d tx %d", n.RxErrors, n.TxErrors),
			fmt.Sprintf("rx %s/s %d pkts, tx %s/s %d pkts", fmtBytes(n.RxBps), n.RxPackets, fmtBytes(n.TxBps), n.TxPackets))
	}
}

// tcpRow writes TCP: retransmits against segments sent, accept-queue
// overflows, errors.
func tcpRow(t tableRows, s *Sample) {
	tc := s.TCP
	if tc == nil {
		t.row("tcp", "-", "n/a", "n/a", "")
		return
	}
	rp := "n/a"
	if tc.RetransPct != nil {
		rp = fmtPct(*tc.RetransPct)
	}
	t.row("tcp", "-", fmt.Sprintf("retrans %s (%d/%d), listen overflows %d drops %d", rp, tc.RetransSegs, tc.OutSegs, tc.ListenOverflows, tc.ListenDrops),
		fmt.Sprintf("in errs %d", tc.InErrs), fmt.Sprintf("established %d, resets sent %d", tc.CurrEstab, tc.OutRsts))
}

// fdsRow writes the broker's open files against its limit, and the
// system's.
func fdsRow(t tableRows, s *Sample) {
	f := s.FDs
	futil, fdetail := "n/a (no broker)", fmt.Sprintf("system %d of %d", f.SystemOpen, f.SystemMax)
	if b := f.Broker; b != nil {
		if b.Pct != nil {
			futil = fmtPct(*b.Pct) + " (broker)"
			fdetail = fmt.Sprintf("broker pid %d %d of %d, ", b.PID, b.Open, *b.Limit) + fdetail
		} else {
			futil = "n/a (unlimited)"
			fdetail = fmt.Sprintf("broker pid %d %d open, ", b.PID, b.Open) + fdetail
		}
	}
	t.row("fds", futil, "-", "n/a", fdetail)
}

// stallText: "some 12.0%" (and " full 3.0%" with full), or n/a.
func stallText(st *Stall, full bool) string {
	if st == nil {
		return "n/a"
	}
	t := "some " + fmtPct(st.SomePct)
	if full && st.FullPct != nil {
		t += " full " + fmtPct(*st.FullPct)
	}
	return t
}
