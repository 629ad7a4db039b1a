package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kscope-dev/kscope/internal/agent"
	"github.com/kscope-dev/kscope/internal/clients"
	"github.com/kscope-dev/kscope/internal/consumers"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/keylogagent"
	"github.com/kscope-dev/kscope/internal/metrics"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/traceexport"
	"github.com/kscope-dev/kscope/internal/wire"
)

type agentOptions struct {
	ports           []uint
	iface           string
	pid             string
	logDirs         []string
	tlsKeyLog       string
	tlsKeys         string
	brokerID        string
	otlp            string
	clusterID       string
	listen          string
	out             string
	slow            time.Duration
	slowAPIs        []string
	rotate          time.Duration
	keep            int
	slowRate        int
	topTopics       int
	topClients      int
	topPartitions   int
	partitionLabel  bool
	native          bool
	noTrace         bool
	syscallProbe    iotrace.SyscallProbe
	waits           bool
	sched           bool
	runqMin         time.Duration
	messageIDHeader string
	duration        time.Duration
	quiet           bool
	pprof           bool
	target          string
	clientsWindow   time.Duration
	topClientRows   int
	consumersWindow time.Duration
	views           []string
}

func newAgentCmd() *cobra.Command {
	var o agentOptions
	cmd := &cobra.Command{
		Use:   "agent [flags]",
		Short: "Export a broker's request, write and journal latency to Prometheus, continuously",
		Long: `Runs live capture (AF_PACKET) and iotrace (eBPF) on a broker host without
stopping, and serves:

  /metrics  Prometheus metrics (kscope_*): request latency histograms by API
            and topic, requests, records and bytes by API, topic and client
            id, errors by Kafka error name, requests in flight; write and
            fsync latency by topic, partition and op; journal commits and
            block I/O by device; the agent's own health (packets, drops,
            bytes skipped, decode errors, connections, restarts); with
            --sched, the broker threads' waits for a CPU by thread class
            and its cgroup's CPU throttling. Buckets
            from 100 µs to 30 s; native histograms with --native-histograms.
  /healthz  JSON; 200 when capture and tracing work, 503 with what is
            degraded otherwise.

Topics, partitions and clients are bounded: the --top-* with most traffic
are named, the rest are "other".

With --out DIR, slow requests (--slow, of --slow-api) with the requests
before them on their connections and the writes, journal commits, block
requests and kernel waits (with --sched: the threads' waits for a CPU and
wake-ups, the connections' threads, the cgroup's throttling) around them
are kept in rotating recording
directories DIR/slow-<time>/ that 'kscope explain' and 'kscope report'
read. The agent keeps running when the broker restarts (--pid auto traces
the next one), and when the capture interface goes away (it is opened
again every second). Needs root (or CAP_NET_RAW, CAP_BPF, CAP_PERFMON).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if ctx == nil {
				ctx = context.Background()
			}
			return runAgent(ctx, cmd.ErrOrStderr(), &o)
		},
	}
	agentFlags(&o, cmd.Flags())
	return cmd
}

// agentFlags defines the agent's flags on f, with their checks.
func agentFlags(o *agentOptions, f *pflag.FlagSet) {
	f.UintSliceVar(&o.ports, "port", []uint{9092}, "broker port (repeatable)")
	f.StringVar(&o.iface, "iface", "any", "interface to capture on (any: all)")
	f.StringVar(&o.pid, "pid", "auto", "the broker's pid, or auto: the one JVM running kafka.Kafka, followed across restarts")
	f.StringSliceVar(&o.logDirs, "log-dirs", nil, "the broker's log dirs (default: found from its open files)")
	f.StringVar(&o.brokerID, "broker-id", "", "the broker_id label of every series (default: node.id from the broker's meta.properties)")
	f.StringVar(&o.clusterID, "cluster-id", "", "the cluster_id label of every series (default: cluster.id from the broker's meta.properties)")
	f.StringVar(&o.otlp, "otlp-endpoint", "", "with --out: explain each slow request kept and send it as an OpenTelemetry trace to this OTLP/HTTP endpoint (host:port or http(s)://host:port)")
	f.StringVar(&o.listen, "listen", "127.0.0.1:9464", "address to serve /metrics and /healthz on")
	f.StringVar(&o.out, "out", "", "keep slow requests and their I/O in rotating recordings under this directory")
	f.DurationVar(&o.slow, "slow", 100*time.Millisecond, "with --out: keep requests at least this slow (of --slow-api) with the I/O around them; with --otlp-endpoint, each one kept is explained")
	f.StringSliceVar(&o.slowAPIs, "slow-api", []string{"Produce"}, "with --out: the APIs --slow applies to (repeatable; all: every API)")
	f.DurationVar(&o.rotate, "rotate", time.Hour, "with --out: start a new recording after this long")
	f.IntVar(&o.keep, "keep", 24, "with --out: recordings kept (the oldest are deleted)")
	f.IntVar(&o.slowRate, "slow-rate", 200, "with --out: slow requests written per second at most")
	f.IntVar(&o.topTopics, "top-topics", 50, "topics named in labels (by traffic); the rest are \"other\"")
	f.IntVar(&o.topClients, "top-clients", 50, "client ids named in labels (by traffic); the rest are \"other\"")
	f.IntVar(&o.topPartitions, "top-partitions", 500, "topic-partitions named in labels (by traffic); the rest are \"other\"")
	f.BoolVar(&o.partitionLabel, "partition-label", false, "add a partition label to the request latency histogram")
	f.BoolVar(&o.native, "native-histograms", false, "also offer Prometheus native histograms (protobuf scrapes)")
	addSyscallProbeFlag(f, &o.syscallProbe)
	f.BoolVar(&o.noTrace, "no-trace", false, "capture only: no eBPF tracing of writes and journal")
	f.BoolVar(&o.waits, "waits", true, "with --out: keep the broker threads' kernel waits of 1 ms and more")
	f.BoolVar(&o.sched, "sched", false, "trace the broker threads' waits for a CPU (kscope_run_delay_seconds), their wake-ups and connections' threads, and sample the cgroup's CPU throttling; with --out, kept for explain's cpu-starved, park-wait and request-queue")
	f.DurationVar(&o.runqMin, "runq-min", iotrace.DefaultRunQueueMin, "with --sched: the shortest wait for a CPU traced")
	f.StringVar(&o.messageIDHeader, "message-id-header", "message-id", "record header holding message ids (for the slow log)")
	f.DurationVar(&o.duration, "duration", 0, "stop after this long (0: at Ctrl-C or SIGTERM)")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "no notes on stderr")
	f.BoolVar(&o.pprof, "pprof", false, "also serve Go's profiler of the agent itself on /debug/pprof/")
	addTargetVersionFlag(f, &o.target)
	f.DurationVar(&o.clientsWindow, "clients-window", clients.DefaultWindow, "the time the clients view (/clients, kscope_client_*) covers: the last whole window")
	f.IntVar(&o.topClientRows, "top-client-rows", metrics.DefaultTopClientRows, "clients (address, principal, client id) named in kscope_client_* series; the rest are \"other\"")
	f.DurationVar(&o.consumersWindow, "consumers-window", consumers.DefaultWindow, "the consumers view (/consumers, kscope_consumer_*) forgets consumers silent longer than this, and older rebalances")
	f.StringSliceVar(&o.views, "views", agent.ViewNames(), "the views fed every request, each served at /<view> and as its kscope_* series (none: no view; a view off costs nothing per request, nor do the fields only it reads); known: "+strings.Join(agent.ViewNames(), ", "))
	check(f, "views", &o.views, agent.CheckViews)
	check(f, "clients-window", &o.clientsWindow, positive)
	check(f, "consumers-window", &o.consumersWindow, positive)
	check(f, "top-client-rows", &o.topClientRows, positive)
	f.StringVar(&o.tlsKeys, "tls-keys", "", "attach: load the extract-tls-secrets Java agent into each broker traced (jcmd) and decrypt its TLS listeners with the key log it writes (--tls-keylog, default each JVM's own in "+keylogagent.HostDir+"; mode 0600); only connections that start after the attach are decrypted")
	f.StringVar(&o.tlsKeyLog, "tls-keylog", "", "NSS key log of the broker's TLS listeners (it may still be growing): decrypt their connections; the keys are never exported")
	check(f, "port", &o.ports, each(tcpPort))
	check(f, "iface", &o.iface, notEmpty)
	check(f, "pid", &o.pid, pidOr("auto"))
	check(f, "log-dirs", &o.logDirs, each(notEmpty))
	check(f, "otlp-endpoint", &o.otlp, otlpEndpoint)
	check(f, "listen", &o.listen, listenAddr)
	check(f, "slow", &o.slow, positive)
	check(f, "slow-api", &o.slowAPIs, slowAPIs)
	check(f, "rotate", &o.rotate, positive)
	check(f, "keep", &o.keep, positive)
	check(f, "slow-rate", &o.slowRate, positive)
	check(f, "top-topics", &o.topTopics, positive)
	check(f, "top-clients", &o.topClients, positive)
	check(f, "top-partitions", &o.topPartitions, positive)
	check(f, "runq-min", &o.runqMin, positive)
	check(f, "duration", &o.duration, nonNegative)
	check(f, "tls-keys", &o.tlsKeys, tlsKeysWay)
}

// slowAPIs is --slow-api: known APIs, or all alone.
func slowAPIs(apis []string) error {
	if slices.Contains(apis, "all") {
		if len(apis) > 1 {
			return errors.New("all goes alone")
		}
		return nil
	}
	return each(knownAPI)(apis)
}

// apiNames turns APIs as the flags take them (any case, or keys) into
// the names decoded requests carry, which the slow log compares exactly.
func apiNames(apis []string) []string {
	names := make([]string, len(apis))
	for i, a := range apis {
		key, _ := wire.ParseAPI(a) // checked by the flag's rule
		names[i] = wire.APIName(key)
	}
	return names
}

func runAgent(ctx context.Context, stderr io.Writer, o *agentOptions) error {
	ac, err := agentConfig(o, stderr)
	if err != nil {
		return err
	}
	a, err := agent.New(ac)
	if err != nil {
		return badInput(err)
	}
	ctx, release := untilStopped(ctx, o.duration)
	defer release()
	return serveAndRunAgent(ctx, a, o.listen, stderr)
}

// agentConfig checks what the flags name (the pid, the --out directory,
// the key log to attach with) and makes the agent's configuration.
func agentConfig(o *agentOptions, stderr io.Writer) (agent.Config, error) {
	cfg, err := wireConfig(o.ports, o.messageIDHeader)
	if err != nil {
		return agent.Config{}, err
	}
	pid := 0
	if o.pid != "auto" && o.pid != "" {
		if pid, err = strconv.Atoi(o.pid); err != nil || pid <= 0 {
			return agent.Config{}, badInput(fmt.Errorf("--pid %q: want a process id or auto", o.pid))
		}
	}
	// A file, a device or a FIFO where the slow-request log's directory
	// goes is refused before anything starts.
	if o.out != "" {
		if err := safefile.OutputDir(o.out); err != nil {
			return agent.Config{}, badInput(fmt.Errorf("--out: %w", err))
		}
	}
	switch {
	case o.tlsKeys == "attach" && o.tlsKeyLog == "":
		// Each JVM's own key log there, shared with record.
		o.tlsKeyLog = keylogagent.HostDir
		if err := keylogagent.EnsureHostDir(); err != nil {
			return agent.Config{}, err
		}
	case o.tlsKeys == "attach":
		if err := createKeyLog(o.tlsKeyLog); err != nil {
			return agent.Config{}, err
		}
	}
	ac := agent.Config{
		Interface: o.iface, Wire: cfg, TLSKeyLog: o.tlsKeyLog, TLSKeysAttach: o.tlsKeys == "attach", PID: pid, LogDirs: o.logDirs, NoTrace: o.noTrace, SyscallProbes: o.syscallProbe, Waits: o.waits, Pprof: o.pprof,
		Sched: o.sched, RunQueueMin: o.runqMin, Identity: agent.Identity{BrokerID: o.brokerID, ClusterID: o.clusterID},
		Traces: traceexport.Config{Endpoint: o.otlp},
		Metrics: metrics.Options{TopTopics: o.topTopics, TopClients: o.topClients, TopPartitions: o.topPartitions,
			PartitionLabel: o.partitionLabel, NativeHistograms: o.native},
	}
	if ac.Clients.Options, err = clientsOptionsFor(o.target); err != nil {
		return agent.Config{}, err
	}
	ac.Clients.Window, ac.Clients.Top = o.clientsWindow, o.topClientRows
	ac.Consumers.Window = o.consumersWindow
	ac.Views = o.views
	if o.out != "" {
		ac.SlowLog = agent.SlowLogConfig{Dir: o.out, Threshold: o.slow, Rotate: o.rotate, Keep: o.keep, MaxPerSecond: o.slowRate}
		if len(o.slowAPIs) == 1 && o.slowAPIs[0] == "all" {
			ac.SlowLog.AllAPIs = true
		} else {
			ac.SlowLog.APIs = apiNames(o.slowAPIs)
		}
	}
	if !o.quiet {
		ac.Log = stderr
	}
	return ac, nil
}

// serveAndRunAgent serves /metrics and /healthz on listen, then runs the
// agent until ctx ends. The listener comes first: a port in use ends the
// command (bad input) before anything is traced.
func serveAndRunAgent(ctx context.Context, a *agent.Agent, listen string, stderr io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	listening := make(chan error, 1)
	var serveErr error
	var wg sync.WaitGroup
	wg.Go(func() {
		serveErr = a.Serve(ctx, listen, func(addr net.Addr) {
			fmt.Fprintf(stderr, "agent: serving http://%s/metrics and /healthz\n", addr)
			listening <- nil
		})
		if serveErr != nil {
			listening <- serveErr
			cancel()
		}
	})
	if err := <-listening; err != nil {
		wg.Wait()
		return badInput(fmt.Errorf("--listen %s: %w", listen, err))
	}
	runErr := a.Run(ctx)
	cancel()
	wg.Wait()
	return errors.Join(runErr, serveErr)
}

// createKeyLog makes sure the key log the Java agent will append to
// exists, since the capture opens it before the agent is loaded. A path
// that is not a regular file (a device, a FIFO, a directory, a dangling
// symbolic link) is refused without being opened; the open is
// non-blocking in case a FIFO is swapped in meanwhile.
func createKeyLog(path string) error {
	real, err := safefile.Target{Path: path}.Resolve()
	if err != nil {
		return badInput(fmt.Errorf("--tls-keylog: %w", err))
	}
	f, err := os.OpenFile(real, os.O_CREATE|os.O_WRONLY|os.O_APPEND|syscall.O_NONBLOCK, 0o600)
	if err != nil {
		return fmt.Errorf("--tls-keys attach: %w", err)
	}
	return f.Close()
}
