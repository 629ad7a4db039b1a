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
	// Device and interface names come from the host and the flags:
	// escaped, as everything printed.
	row := func(cols ...string) {
		for i := range cols {
			cols[i] = output.Escape(cols[i])
		}
		fmt.Fprintln(tw, strings.Join(cols, "\t"))
	}

	c := s.CPU
	row("cpu", fmtPct(c.UtilPct), fmt.Sprintf("runq %.1f/%d, psi %s", c.RunQueue, c.CPUs, stallText(c.PSI, false)), "-",
		fmt.Sprintf("usr %s sys %s irq %s iowait %s steal %s load1 %.2f blocked %.0f",
			fmtPct(c.UserPct), fmtPct(c.SystemPct), fmtPct(c.IRQPct), fmtPct(c.IowaitPct), fmtPct(c.StealPct), c.Load1, c.Blocked))
	for _, one := range c.PerCPU {
		sat := "-"
		if one.RunDelay != nil {
			sat = fmt.Sprintf("run delay %.2f", *one.RunDelay)
		}
		row(fmt.Sprintf("  cpu%d", one.CPU), fmtPct(one.UtilPct), sat, "-",
			fmt.Sprintf("iowait %s steal %s", fmtPct(one.IowaitPct), fmtPct(one.StealPct)))
	}

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
	row("memory", fmtPct(m.UsedPct)+" used", strings.Join(msat, ", "), oom,
		fmt.Sprintf("avail %s cached %s dirty %s writeback %s (throttle at %s)", fmtBytes(float64(m.AvailableBytes)),
			fmtBytes(float64(m.CachedBytes)), fmtBytes(float64(m.DirtyBytes)), fmtBytes(float64(m.WritebackBytes)),
			fmtBytes(float64(m.DirtyThrottleBytes))))

	row("io", "-", "psi "+stallText(s.IOPSI, true), "-", "all devices (PSI)")
	for _, d := range s.Disks {
		await := "n/a"
		if d.AwaitMs != nil {
			await = fmt.Sprintf("%.2fms", *d.AwaitMs)
		}
		sat := fmt.Sprintf("aqu %.2f, await %s", d.AvgQueue, await)
		for _, t := range d.Throttles {
			sat += fmt.Sprintf(", cgroup %s %s of %s", t.Cgroup, fmtPct(t.Pct), throttleLabel(t))
		}
		row("disk "+d.Name, fmtPct(d.UtilPct), sat, "n/a",
			fmt.Sprintf("%s r %s/s %.0f iops, w %s/s %.0f iops, in flight %d", d.Dev, fmtBytes(d.ReadBps), d.ReadIOPS,
				fmtBytes(d.WriteBps), d.WriteIOPS, d.InFlight))
	}
	for _, n := range s.NICs {
		util := "n/a (no speed)"
		if n.UtilPct != nil {
			util = fmt.Sprintf("%s of %dMb/s", fmtPct(*n.UtilPct), *n.SpeedMbps)
		}
		q := "qdisc n/a"
		if n.QdiscDrops != nil {
			q = fmt.Sprintf("%s drops %d overlimits %d backlog %s", n.Qdisc, *n.QdiscDrops, deref(n.QdiscOverlimits), fmtBytes(float64(deref(n.QdiscBacklog))))
		}
		row("nic "+n.Name, util, fmt.Sprintf("drops rx %d tx %d, %s", n.RxDrops, n.TxDrops, q),
			fmt.Sprintf("rx %d tx %d", n.RxErrors, n.TxErrors),
			fmt.Sprintf("rx %s/s %d pkts, tx %s/s %d pkts", fmtBytes(n.RxBps), n.RxPackets, fmtBytes(n.TxBps), n.TxPackets))
	}
	if t := s.TCP; t != nil {
		rp := "n/a"
		if t.RetransPct != nil {
			rp = fmtPct(*t.RetransPct)
		}
		row("tcp", "-", fmt.Sprintf("retrans %s (%d/%d), listen overflows %d drops %d", rp, t.RetransSegs, t.OutSegs, t.ListenOverflows, t.ListenDrops),
			fmt.Sprintf("in errs %d", t.InErrs), fmt.Sprintf("established %d, resets sent %d", t.CurrEstab, t.OutRsts))
	} else {
		row("tcp", "-", "n/a", "n/a", "")
	}
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
	row("fds", futil, "-", "n/a", fdetail)
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
