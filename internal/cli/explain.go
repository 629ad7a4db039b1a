package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/explain/explainout"
	"github.com/kscope-dev/kscope/internal/jfr"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/wire"
)

type explainOptions struct {
	pcaps           []string
	ioFiles         []string
	jfrFile         string
	ports           []uint
	logDirs         []string
	noSegments      bool
	messageIDHeader string
	slow            time.Duration
	percentile      float64
	share           float64
	stall           time.Duration
	slowWrite       time.Duration
	request         string
	format          string
	summary         bool
	top             int
	quiet           bool
}

func newExplainCmd() *cobra.Command {
	var o explainOptions
	cmd := &cobra.Command{
		Use:   "explain (DIR | --pcap FILE --io FILE) [flags]",
		Short: "Name the root cause of every slow produce request",
		Long: `Explains every produce request at or above --slow (default: the p99 of the
recording's produce latencies): joins it with the broker's writes to its
partitions, the journal commits on their devices and, with a JFR file, the
handler threads' lock waits, and names one cause with its evidence:

  slow-write     its own append to the partition log took most of its time
  lock-wait      it waited while another append to the same partition log
                 was in progress (on the partition lock, or behind the
                 previous request on its connection)
  replication    acks=all: appended early, answered late (followers)
  throttle       the response's throttle time accounts for it
  response-send  the response took most of the time to leave
  unexplained    nothing accounts for at least --share of its latency

A slow write that overlapped a jbd2 commit or XFS log write on the same
device for most of its time has root "journal". Writes are matched to a
request exactly by message id when the segment files are readable (the log
dirs in meta.json, or --log-dirs), else by byte count and time.

DIR is a recording made by 'kscope record'. Without one, give a capture
(--pcap) and iotrace JSON output (--io). See docs/explain.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExplain(cmd.OutOrStdout(), cmd.ErrOrStderr(), args, &o)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&o.pcaps, "pcap", nil, "capture file(s) instead of a recording (with --io)")
	f.StringSliceVar(&o.ioFiles, "io", nil, "iotrace --format json output (with --pcap)")
	f.StringVar(&o.jfrFile, "jfr", "", "a Java Flight Recorder file of the broker: its jdk.JavaMonitorEnter events are lock-wait evidence")
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port, with --pcap")
	f.StringSliceVar(&o.logDirs, "log-dirs", nil, "the broker's log dirs, for exact matching by message id (default: from meta.json)")
	f.BoolVar(&o.noSegments, "no-segments", false, "do not read segment files: match writes by bytes and time only")
	f.StringVar(&o.messageIDHeader, "message-id-header", "message-id", "record header holding message ids")
	f.DurationVar(&o.slow, "slow", 0, "explain produce requests at or above this latency (default: the --percentile)")
	f.Float64Var(&o.percentile, "percentile", 99, "without --slow: the latency percentile that makes a request slow")
	f.Float64Var(&o.share, "share", 0.5, "part of a request's latency a cause must account for")
	f.DurationVar(&o.stall, "stall", 50*time.Millisecond, "writes at least this long are grouped into stalls per device")
	f.DurationVar(&o.slowWrite, "slow-write", 10*time.Millisecond, "appends at least this long are listed with the journal commits that overlapped them")
	f.StringVar(&o.request, "request", "", "show the timeline of one request, CLIENT/CORRELATION_ID (client ip:port or port)")
	f.StringVar(&o.format, "format", "table", "output format: table or json (JSON Lines: one object per slow request, then {\"summary\":...})")
	f.BoolVar(&o.summary, "summary", false, "print only the summary")
	f.IntVar(&o.top, "top", 10, "rows in the summary's worst-of lists")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no notes on stderr")
	return cmd
}

func runExplain(stdout, stderr io.Writer, args []string, o *explainOptions) error {
	if (len(args) == 1) == (len(o.pcaps) > 0) {
		return badInput(errors.New("give a recording directory, or --pcap and --io"))
	}
	if len(o.pcaps) > 0 && len(o.ioFiles) == 0 {
		return badInput(errors.New("--pcap needs --io (the broker's iotrace --format json output)"))
	}
	if o.share <= 0 || o.share > 1 {
		return badInput(fmt.Errorf("--share %v: want a fraction in (0, 1]", o.share))
	}
	if o.percentile <= 0 || o.percentile > 100 {
		return badInput(fmt.Errorf("--percentile %v: want (0, 100]", o.percentile))
	}
	var only *explain.RequestID
	if o.request != "" {
		id, err := explain.ParseRequestID(o.request)
		if err != nil {
			return badInput(err)
		}
		only = &id
	}
	if o.format != "table" && o.format != "json" {
		return badInput(output.UnknownFormat(o.format))
	}

	idx := explain.NewIndex()
	var (
		requestsPath string
		scan         *explain.Scan
		scanErr      error
		scanned      = make(chan struct{})
		logDirs      = o.logDirs
		jfrPath      = o.jfrFile
	)
	if len(args) == 1 {
		dir := args[0]
		meta, err := recording.ReadMeta(dir)
		if err != nil {
			return badInput(fmt.Errorf("%s is not a kscope recording: %w", dir, err))
		}
		if len(logDirs) == 0 {
			for _, d := range meta.Broker.LogDirs {
				logDirs = append(logDirs, d.Path)
			}
		}
		requestsPath = filepath.Join(dir, recording.RequestsFile)
		// The requests are scanned while the index loads.
		go func() {
			defer close(scanned)
			scan, scanErr = explain.ScanRequests(requestsPath, only)
		}()
		if err := explain.LoadIO(idx, filepath.Join(dir, recording.WritesFile), filepath.Join(dir, recording.JournalFile)); err != nil {
			return badInput(err)
		}
		if jfrPath == "" {
			if p := filepath.Join(dir, recording.LockWaitsFile); fileExists(p) {
				if err := explain.LoadLockWaits(idx, p); err != nil {
					return badInput(err)
				}
			} else if p := filepath.Join(dir, recording.JFRFile); fileExists(p) {
				jfrPath = p
			}
		}
	} else {
		tmp, err := os.CreateTemp("", "kscope-explain-requests-*.jsonl")
		if err != nil {
			return err
		}
		defer os.Remove(tmp.Name())
		if err := decodeToJSONL(tmp, o.pcaps, o.ports, o.messageIDHeader, logDirs, stderr, o.quiet); err != nil {
			tmp.Close()
			return err
		}
		if err := tmp.Close(); err != nil {
			return err
		}
		requestsPath = tmp.Name()
		go func() {
			defer close(scanned)
			scan, scanErr = explain.ScanRequests(requestsPath, only)
		}()
		if err := explain.LoadIO(idx, o.ioFiles...); err != nil {
			return badInput(err)
		}
	}
	if jfrPath != "" {
		st, err := jfr.ReadLockWaits(jfrPath, func(l *event.LockWait) error { idx.AddLockWait(l); return nil })
		if err != nil {
			return badInput(err)
		}
		if !o.quiet {
			fmt.Fprintf(stderr, "kscope: %s: %d lock waits\n", jfrPath, st.LockWaits)
		}
	}

	<-scanned
	if scanErr != nil {
		return badInput(scanErr)
	}
	var lookup explain.IDLookup
	if !o.noSegments && len(logDirs) > 0 && o.messageIDHeader != "" {
		lookup = explain.SegmentLookup(logDirs, o.messageIDHeader)
	}
	e := explain.New(explain.Config{Slow: o.slow, Percentile: o.percentile, Share: o.share, StallMin: o.stall, SlowWrite: o.slowWrite}, idx, lookup)

	if only != nil {
		var found *explain.Finding
		if _, err := e.Run(scan, explain.RunOptions{}, func(f *explain.Finding) error { found = f; return nil }); err != nil {
			return badInput(err)
		}
		if o.format == "json" {
			j := output.NewJSONLines(stdout)
			if err := j.Encode(found); err != nil {
				return err
			}
			return j.Flush()
		}
		return explainout.WriteTimeline(stdout, found)
	}

	w, err := explainout.NewWriter(stdout, o.format, !o.summary)
	if err != nil {
		return badInput(err)
	}
	var writeErr error
	sum, err := e.Run(scan, explain.RunOptions{Top: o.top}, func(f *explain.Finding) error {
		if writeErr == nil {
			writeErr = w.Finding(f)
		}
		return nil
	})
	if err != nil {
		return badInput(err)
	}
	if writeErr == nil {
		writeErr = w.Summary(sum)
	}
	if ferr := w.Flush(); writeErr == nil {
		writeErr = ferr
	}
	if writeErr != nil {
		return fmt.Errorf("writing output: %w", writeErr)
	}
	return nil
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// decodeToJSONL runs capture files through the request decoder into w as
// JSON Lines, as 'kscope requests --format json' would.
func decodeToJSONL(w io.Writer, pcaps []string, ports []uint, header string, logDirs []string, stderr io.Writer, quiet bool) error {
	cfg, err := wireConfig(ports, header)
	if err != nil {
		return err
	}
	topics := wire.NewTopicNames()
	if len(logDirs) > 0 {
		ids, err := logdir.TopicIDs(logDirs...)
		if err != nil {
			return badInput(fmt.Errorf("--log-dirs: %w", err))
		}
		for id, name := range ids {
			topics.Add(id, name)
		}
	}
	j := output.NewJSONLines(w)
	var writeErr error
	res, err := source.ReadFiles(pcaps, source.Options{Wire: cfg, Topics: topics}, func(r *event.Request) {
		if writeErr == nil {
			writeErr = j.Encode(r)
		}
	})
	if err != nil {
		return badInput(err)
	}
	if ferr := j.Flush(); writeErr == nil {
		writeErr = ferr
	}
	if !quiet {
		for _, w := range res.Warnings {
			fmt.Fprintf(stderr, "kscope: warning: %v\n", w)
		}
	}
	return writeErr
}
