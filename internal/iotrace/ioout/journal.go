package ioout

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/output"
)

// CommitRow returns the table cells of a journal commit: OP is
// jbd2-commit, ext4-fast-commit or xlog-write, TID and THREAD are "-" (a
// fast commit's thread and "pid N"), BYTES the iclog bytes (XFS) or "-",
// FILE the device, the transaction or lsn and the phases (a fast commit's
// status and blocks).
func CommitRow(c *event.JournalCommit) []string {
	if c.FastCommit != nil {
		return fastCommitRow(c, c.FastCommit)
	}
	op, bytes, what := "jbd2-commit", "-", "dev "+c.Dev+" tid "+strconv.FormatUint(uint64(c.TID), 10)
	if c.Kind == event.KindXlogWrite {
		op, bytes = "xlog-write", strconv.FormatInt(c.Bytes, 10)
		what = fmt.Sprintf("dev %s lsn %d:%d", c.Dev, c.LSN>>32, c.LSN&(1<<32-1))
	}
	if c.SyncCommit {
		what += " sync"
	}
	if p := c.Phases; p != nil {
		what += fmt.Sprintf(" (run %s lock %s flush %s log %s ms; %d handles, %d blocks, %d logged)",
			msTick(p.RunningMs), msTick(p.LockedMs), msTick(p.FlushingMs), msTick(p.LoggingMs),
			p.HandleCount, p.Blocks, p.BlocksLogged)
	}
	return []string{timeOfDay(c.Start), timeOfDay(c.End), strconv.FormatFloat(c.LatencyMs, 'f', 3, 64),
		"-", "-", op, bytes, "-", what}
}

func fastCommitRow(c *event.JournalCommit, fc *event.FastCommit) []string {
	what := fmt.Sprintf("dev %s tid %d %s, %d blocks", c.Dev, c.TID, output.Escape(fc.Status), fc.Blocks)
	if fc.FellBack() {
		what += ", fell back to a full commit"
	}
	return []string{timeOfDay(c.Start), timeOfDay(c.End), strconv.FormatFloat(c.LatencyMs, 'f', 3, 64),
		strconv.Itoa(fc.TID), "pid " + strconv.Itoa(fc.PID), "ext4-fast-commit", "-", "-", what}
}

// SyncRow returns the table cells of an ext4 fsync: OP ext4-fsync or
// ext4-fdatasync, BYTES "-" or the errno, FILE the broker's file or
// "dev D ino N".
func SyncRow(s *event.FileSync) []string {
	op := "ext4-fsync"
	if s.Datasync {
		op = "ext4-fdatasync"
	}
	bytes := "-"
	if s.Error != "" {
		bytes = s.Error
	}
	file := output.Escape(s.File)
	if file == "" {
		file = "dev " + s.Dev + " ino " + strconv.FormatUint(s.Ino, 10)
	}
	return []string{timeOfDay(s.Start), timeOfDay(s.End), strconv.FormatFloat(s.LatencyMs, 'f', 3, 64),
		strconv.Itoa(s.TID), "pid " + strconv.Itoa(s.PID), op, bytes, "-", file}
}

// BlockRow returns the table cells of a block request: OP blk-read,
// blk-write, blk-flush or blk-other, OFF_KB the sector's offset / 1024,
// FILE the disk and rwbs.
func BlockRow(b *event.BlockIO) []string {
	bytes := strconv.FormatInt(b.Bytes, 10)
	if b.Error != "" {
		bytes = b.Error
	}
	return []string{timeOfDay(b.Start), timeOfDay(b.End), strconv.FormatFloat(b.LatencyMs, 'f', 3, 64),
		"-", "-", "blk-" + b.Op, bytes, strconv.FormatUint(b.Sector/2, 10), "dev " + b.Dev + " " + b.RWBS}
}

// WaitRow is a kernel wait in the table's columns: OP "wait-D", FILE the
// innermost kernel frames.
func WaitRow(k *event.KernelWait) []string {
	return []string{timeOfDay(k.Start), timeOfDay(k.End), strconv.FormatFloat(k.LatencyMs, 'f', 3, 64),
		strconv.Itoa(k.TID), output.Escape(k.Thread), "wait-D", "-", "-", stackSummary(k.Stack)}
}

// StealRow is hypervisor steal in the table's columns: LATENCY the time
// stolen, TID and THREAD the task it was taken from (the broker's thread
// name, "pid N" for another process, "idle"), OP "cpu-steal", FILE the
// CPU and the interval between the two context switches.
func StealRow(c *event.CPUSteal) []string {
	return []string{timeOfDay(c.Start), timeOfDay(c.End), strconv.FormatFloat(c.StolenMs, 'f', 3, 64),
		strconv.Itoa(c.TID), stealTask(c), "cpu-steal", "-", "-", stealWhat(c)}
}

func stealTask(c *event.CPUSteal) string {
	switch {
	case c.PID == 0:
		return "idle"
	case c.Thread != "":
		return output.Escape(c.Thread)
	}
	return "pid " + strconv.Itoa(c.PID)
}

func stealWhat(c *event.CPUSteal) string {
	return fmt.Sprintf("cpu%d: stolen %.3f ms of %.3f ms between context switches",
		c.CPU, c.StolenMs, float64(c.End.Sub(c.Start))/float64(time.Millisecond))
}

// stackSummary is up to five kernel frames, innermost first.
func stackSummary(stack []string) string {
	return output.Escape(strings.Join(stack[:min(len(stack), 5)], "<"))
}

func timeOfDay(t time.Time) string { return t.Local().Format(output.TimeOfDay) }

// The journal events in the CSV columns (csvHeader): RFC 3339 times, the
// table's OP, bytes and offset (bytes; -1 where there is none), FILE.
func commitRecord(c *event.JournalCommit) []string {
	cells := CommitRow(c)
	tid, thread := "", ""
	if c.FastCommit != nil { // run by a thread, as an fsync
		tid, thread = cells[3], cells[4]
	}
	return csvRecord(c.Start, c.End, c.LatencyMs, tid, thread, cells[5], c.Bytes, -1, cells[8], "", -1, c.Dev, "")
}

func syncRecord(s *event.FileSync) []string {
	cells := SyncRow(s)
	return csvRecord(s.Start, s.End, s.LatencyMs, strconv.Itoa(s.TID), cells[4], cells[5], 0, -1, cells[8],
		s.Topic, s.Partition, s.Dev, s.Error)
}

func blockRecord(b *event.BlockIO) []string {
	return csvRecord(b.Start, b.End, b.LatencyMs, "", "", "blk-"+b.Op, b.Bytes, int64(b.Sector)*512,
		"dev "+b.Dev+" "+b.RWBS, "", -1, b.Dev, b.Error)
}

func waitRecord(k *event.KernelWait) []string {
	return csvRecord(k.Start, k.End, k.LatencyMs, strconv.Itoa(k.TID), output.Escape(k.Thread), "wait-D", 0, -1,
		stackSummary(k.Stack), "", -1, "", "")
}

func stealRecord(c *event.CPUSteal) []string {
	return csvRecord(c.Start, c.End, c.StolenMs, strconv.Itoa(c.TID), stealTask(c), "cpu-steal", 0, -1, stealWhat(c), "", -1, "", "")
}

func csvRecord(start, end time.Time, latMs float64, tid, thread, op string, bytes, offset int64,
	file, topic string, partition int32, dev, errName string) []string {
	return []string{start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano),
		strconv.FormatFloat(latMs, 'f', 6, 64), tid, thread, op, strconv.FormatInt(bytes, 10),
		strconv.FormatInt(offset, 10), file, output.Escape(topic), strconv.Itoa(int(partition)), dev, errName}
}

// msTick prints a phase: whole milliseconds or a fraction, as the tick allows.
func msTick(ms float64) string { return strconv.FormatFloat(ms, 'f', -1, 64) }

// deviceSummaryJSON is one line of a JSON device summary. Quantiles are
// upper bounds; kinds without latency (xfs-log-force) have none.
type deviceSummaryJSON struct {
	Dev    string   `json:"dev"`
	Kind   string   `json:"kind"`
	Count  uint64   `json:"count"`
	Bytes  uint64   `json:"bytes"`
	MeanMs *float64 `json:"mean_ms,omitempty"`
	P50Ms  *float64 `json:"p50_le_ms,omitempty"`
	P99Ms  *float64 `json:"p99_le_ms,omitempty"`
	P999Ms *float64 `json:"p99_9_le_ms,omitempty"`
	MaxMs  *float64 `json:"max_le_ms,omitempty"`
}

// WriteDeviceSummaries prints per device and kind the counts and latency
// quantiles of journal commits, fsyncs, XFS log writes and forces, and
// block requests, as a table or JSON Lines (as WriteSummaries).
func WriteDeviceSummaries(w io.Writer, format string, sums []iotrace.DeviceSummary) error {
	if format == "json" {
		j := output.NewJSONLines(w)
		for i := range sums {
			s := &sums[i]
			line := deviceSummaryJSON{Dev: s.Dev, Kind: s.Kind.String(), Count: s.Count, Bytes: s.Bytes}
			if s.Kind.HasLatency() {
				f := func(d float64) *float64 { return &d }
				line.MeanMs, line.P50Ms, line.P99Ms = f(msf(s.Mean())), f(msf(s.Quantile(0.5))), f(msf(s.Quantile(0.99)))
				line.P999Ms, line.MaxMs = f(msf(s.Quantile(0.999))), f(msf(s.Quantile(1)))
			}
			if err := j.Encode(line); err != nil {
				return err
			}
		}
		return j.Flush()
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "DEV\tKIND\tCOUNT\tBYTES\tMEAN(ms)\tp50<=(ms)\tp99<=(ms)\tp99.9<=(ms)\tMAX<=(ms)\t")
	for i := range sums {
		s := &sums[i]
		if !s.Kind.HasLatency() {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t-\t-\t-\t-\t-\t\n", s.Dev, s.Kind, s.Count, s.Bytes)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", s.Dev, s.Kind, s.Count, s.Bytes,
			ms(s.Mean()), ms(s.Quantile(0.5)), ms(s.Quantile(0.99)), ms(s.Quantile(0.999)), ms(s.Quantile(1)))
	}
	return tw.Flush()
}

// PageCacheRow is a run of pages added to the page cache in the table's
// columns: START and END TIME the run, the thread, OP "page-cache-add",
// BYTES the pages' (4 KiB each), FILE the device and inode read.
func PageCacheRow(p *event.PageCacheAdds) []string {
	return []string{timeOfDay(p.Start), timeOfDay(p.End), "-", strconv.Itoa(p.TID), output.Escape(p.Thread), "page-cache-add",
		strconv.FormatInt(p.Pages*4096, 10), "-", pageCacheWhat(p)}
}

func pageCacheWhat(p *event.PageCacheAdds) string {
	return strconv.FormatInt(p.Pages, 10) + " pages of inode " + strconv.FormatUint(p.Inode, 10) + " on " + output.Escape(p.Dev)
}

func pageCacheRecord(p *event.PageCacheAdds) []string {
	return csvRecord(p.Start, p.End, 0, strconv.Itoa(p.TID), output.Escape(p.Thread), "page-cache-add", p.Pages*4096, -1,
		pageCacheWhat(p), "", -1, output.Escape(p.Dev), "")
}
