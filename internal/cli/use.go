package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/use"
)

type useOptions struct {
	pid      string
	logDirs  []string
	devices  []string
	ifaces   []string
	duration time.Duration
	interval time.Duration
	format   string
}

func newUseCmd() *cobra.Command {
	var o useOptions
	cmd := &cobra.Command{
		Use:   "use [flags]",
		Short: "The USE method for the broker's host: utilization, saturation and errors of CPUs, memory, disks, NICs, TCP, files",
		Long: `Samples /proc and /sys every --interval and prints, per interval, a table of
every resource with its utilization, saturation and errors, then a verdict
line naming the saturated resources (docs/use.md has every figure, its
source and formula, and the thresholds):

  cpu     utilization per CPU and in all; run queue against the CPUs, PSI cpu
  memory  used, page cache, dirty and writeback against the kernel's dirty
          thresholds, swapping, direct reclaim, PSI memory; OOM kills
  io      PSI io (all devices)
  disk    the devices of the broker's log dirs (and --device): utilization,
          average queue, await, throughput and IOPS, cgroup I/O limits
  nic     throughput against the link speed (n/a for veth, lo), drops of
          the interface and of its qdisc, errors
  tcp     retransmits against segments sent, accept-queue overflows
  fds     the broker's open files against its limit; the system's

--pid auto finds the one broker (kafka.Kafka); without one, the host is
sampled alone (no broker files, disks: every disk with I/O). --format json
writes one JSON object per interval (the use.jsonl of a recording).
Runs until --duration passes, or Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runUse(ctx, cmd.OutOrStdout(), cmd.ErrOrStderr(), &o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.pid, "pid", "auto", "the broker's pid; auto: the one JVM running kafka.Kafka (none found: the host alone); none")
	f.StringSliceVar(&o.logDirs, "log-dirs", nil, "the broker's log dirs, whose devices are sampled (default: found from its open files)")
	f.StringSliceVar(&o.devices, "device", nil, "also sample this block device (name, /dev path or MAJ:MIN), repeatable")
	f.StringSliceVar(&o.ifaces, "iface", nil, "sample these network interfaces (default: all but lo)")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: at Ctrl-C)")
	f.DurationVar(&o.interval, "interval", time.Second, "length of each interval")
	f.StringVar(&o.format, "format", "table", "output: table or json (JSON Lines)")
	check(f, "pid", &o.pid, pidOr("auto", "none"))
	check(f, "log-dirs", &o.logDirs, each(notEmpty))
	check(f, "device", &o.devices, each(notEmpty))
	check(f, "iface", &o.ifaces, each(notEmpty))
	check(f, "duration", &o.duration, nonNegative)
	// CPU times are counted in 10 ms ticks.
	check(f, "interval", &o.interval, atLeast(100*time.Millisecond))
	check(f, "format", &o.format, oneOf("table", "json"))
	return cmd
}

func runUse(ctx context.Context, stdout, stderr io.Writer, o *useOptions) error {
	pid, notes, err := useBroker(o.pid)
	if err != nil {
		return err
	}
	devs, dnotes := logDirDevices(pid, o.logDirs)
	notes = append(notes, dnotes...)
	cfg := use.Config{PID: pid, Devices: append(devs, o.devices...), Ifaces: o.ifaces}
	s, err := use.NewSampler(cfg)
	if err != nil {
		return err
	}
	for _, n := range append(notes, s.Notes()...) {
		fmt.Fprintf(stderr, "use: %s\n", output.Escape(n))
	}

	ctx, release := untilStopped(ctx, o.duration)
	defer release()
	enc := json.NewEncoder(stdout)
	return use.Run(ctx, s, o.interval, func(smp *use.Sample) error {
		if o.format == "json" {
			return enc.Encode(smp)
		}
		return use.WriteTable(stdout, smp)
	})
}

// useBroker resolves --pid: a number (which must exist), none, or auto
// (the one broker, else none with a note).
func useBroker(s string) (int, []string, error) {
	switch s {
	case "none":
		return 0, nil, nil
	case "auto", "":
		pid, err := iotrace.FindBroker()
		if err != nil {
			return 0, []string{fmt.Sprintf("no broker (%v): sampling the host alone; --pid N names one", err)}, nil
		}
		return pid, nil, nil
	}
	pid, err := strconv.Atoi(s)
	if err != nil || pid <= 0 {
		return 0, nil, badInput(fmt.Errorf("--pid %q: want a process id, auto or none", s))
	}
	if _, err := os.Stat("/proc/" + s); err != nil {
		return 0, nil, badInput(fmt.Errorf("--pid %d: no such process", pid))
	}
	return pid, nil, nil
}

// logDirDevices returns the block devices (major:minor) of the log dirs
// given, or of the broker's when none are: what the disk rows show.
func logDirDevices(pid int, dirs []string) ([]string, []string) {
	var notes []string
	if len(dirs) == 0 && pid > 0 {
		var err error
		if dirs, err = iotrace.LogDirsOf(pid); err != nil {
			notes = append(notes, fmt.Sprintf("log dirs of pid %d: %v (--log-dirs names them)", pid, err))
		}
	}
	var devs []string
	seen := map[string]bool{}
	for _, d := range dirs {
		m, err := hostinfo.MountOf(pid, d)
		if err != nil {
			notes = append(notes, fmt.Sprintf("log dir %s: %v", d, err))
			continue
		}
		if strings.HasPrefix(m.Device, "0:") {
			notes = append(notes, fmt.Sprintf("log dir %s is on %s (device %s), not a block device: no disk figures for it", d, m.FSType, m.Device))
			continue
		}
		if !seen[m.Device] {
			seen[m.Device] = true
			devs = append(devs, m.Device)
		}
	}
	return devs, notes
}
