// Package agent is `kscope agent`: live capture and iotrace running
// continuously on a broker host, exported as Prometheus metrics
// (internal/metrics) on /metrics, with /healthz, and slow requests kept
// with their I/O in rotating recording directories that `kscope explain`
// and `kscope report` read.
//
// Each source runs in its own loop that starts it again when it fails:
// the capture when its interface goes away (reopened by name, every
// second), the tracer when the broker exits (the next kafka.Kafka is
// traced when it appears). Counters are totals across those restarts.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"golang.org/x/sys/unix"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/cgroupcpu"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/explain"
	"github.com/kscope-dev/kscope/internal/hostinfo"
	"github.com/kscope-dev/kscope/internal/iotrace"
	"github.com/kscope-dev/kscope/internal/logdir"
	"github.com/kscope-dev/kscope/internal/metrics"
	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/source"
	"github.com/kscope-dev/kscope/internal/traceexport"
	"github.com/kscope-dev/kscope/internal/wire"
)

// Config configures an agent.
type Config struct {
	// Interface to capture on ("any": all); Wire.Ports are the broker ports.
	Interface string
	Wire      wire.Config
	// TLSKeyLog is the NSS key log of the broker's TLS listeners (its
	// key-log agent appends to it as handshakes happen): connections to
	// them are decrypted with it. The keys are never exported.
	TLSKeyLog string
	// TLSKeysAttach loads the extract-tls-secrets Java agent into every
	// broker the tracer attaches to, writing to TLSKeyLog (which must
	// exist: the capture opens it first), or with TLSKeyLog
	// keylogagent.HostDir to each JVM's key log there.
	TLSKeysAttach bool
	// PID is the broker to trace; 0 finds the one kafka.Kafka JVM, waits
	// for one while there is none, and follows it across restarts.
	PID int
	// LogDirs are the broker's log dirs (default: from its open files).
	LogDirs []string
	// NoTrace runs the capture only (no eBPF).
	NoTrace bool
	// SyscallProbes says where the broker's write system calls are
	// timed (iotrace.Config.SyscallProbes).
	SyscallProbes iotrace.SyscallProbe
	// Waits also traces the broker threads' kernel waits for the slow log.
	Waits bool
	// Sched traces the broker threads' waits for a CPU of at least
	// RunQueueMin (exported by thread class), their wake-ups by each
	// other and which thread serves each connection, and samples the
	// broker's cgroup CPU throttling: explain's cpu-starved, park-wait
	// and request-queue evidence in the slow log.
	Sched       bool
	RunQueueMin time.Duration

	// Identity labels every series; empty fields are read from the
	// broker's meta.properties (resolveIdentity).
	Identity Identity

	Metrics metrics.Options
	// Views are the views fed every request (View; ViewNames): nil
	// for every registered one, empty (or ViewsNone) for none. A view
	// off costs nothing per request, and the decoder skips the fields
	// only it reads (wire.Config.Skip) unless the slow log keeps them.
	Views []string
	// Clients configures the clients view (/clients, kscope_client_*).
	Clients ClientsConfig
	// Consumers configures the consumers view (/consumers,
	// kscope_consumer_*).
	Consumers ConsumersConfig
	SlowLog   SlowLogConfig
	// Traces, with an Endpoint and the slow log on, explains each slow
	// request the slow log keeps, as it is written, and exports the
	// explanation as an OpenTelemetry trace (traceexport).
	Traces traceexport.Config

	// Retry is the pause before a failed source is started again
	// (default 1 s).
	Retry time.Duration
	// Log receives one line per state change (nil: discarded).
	Log io.Writer
	// Pprof serves Go's profiler on /debug/pprof/ (for the agent's own
	// CPU and memory, not the broker's).
	Pprof bool
}

// Agent runs the sources and holds what /metrics and /healthz report.
type Agent struct {
	cfg      Config
	identity Identity // the labels of every series
	registry *prometheus.Registry
	metrics  *metrics.Set
	views    []enabledView         // fed every request, in name order
	slow     *slowLog              // nil without SlowLog.Dir
	traces   *traceexport.Exporter // nil without Traces.Endpoint
	topics   *wire.TopicNames
	// ringKick has the tracer's rings read when the capture has read a
	// block of packets: one wake-up of the agent for both.
	ringKick iotrace.RingKick

	mu      sync.Mutex
	started time.Time
	capture componentState
	trace   componentState
	keyLog  componentState // the key-log agent's attach (TLSKeysAttach)
	// Capture totals of the sockets closed so far, and the open one's.
	capDone, capNow source.Result
	gauges          wire.Gauges
	// Tracer totals of the sessions ended so far, and the current one.
	traceDone iotrace.Stats
	tracer    *iotrace.Tracer
	traceNow  iotrace.Stats
	broker    recording.Broker
	clock     recording.Clock
	restarts  map[string]int64
	// netTIDs are the threads seen serving connections (run delays'
	// class), reset with each traced broker; stopThrottle ends the
	// broker's cgroup throttle sampler.
	netTIDs      map[int]bool
	stopThrottle context.CancelFunc
	throttles    int64
}

// componentState is one source's health.
type componentState struct {
	Up    bool      `json:"up"`
	Since time.Time `json:"since"`
	Error string    `json:"error,omitempty"`
}

func (c *componentState) set(up bool, err error) {
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if c.Up != up || c.Error != msg || c.Since.IsZero() {
		c.Since = time.Now().UTC()
	}
	c.Up, c.Error = up, msg
}

// New sets an agent up: the metrics registered in a new registry (Go
// runtime and process collectors included), the slow log's directory.
func New(cfg Config) (*Agent, error) {
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.Interface == "" {
		cfg.Interface = "any"
	}
	if len(cfg.Wire.Ports) == 0 {
		return nil, errors.New("agent: no broker ports")
	}
	a := &Agent{cfg: cfg, registry: prometheus.NewRegistry(), topics: wire.NewTopicNames(),
		restarts: map[string]int64{"capture": 0, "trace": 0}, started: time.Now(), netTIDs: make(map[int]bool)}
	if cfg.RunQueueMin <= 0 {
		a.cfg.RunQueueMin = iotrace.DefaultRunQueueMin
	}
	// Message ids serve only the slow log: read from the produce requests
	// slow enough for it (reading every record of every request was a
	// sixth of the agent's CPU), never from fetch responses.
	a.cfg.Wire.ProduceIDsOnly = true
	if cfg.SlowLog.Dir == "" {
		a.cfg.Wire.MessageIDHeader = ""
	} else {
		a.cfg.Wire.MessageIDsMinLatency = cfg.SlowLog.withDefaults().Threshold
	}
	a.capture.set(false, errors.New("starting"))
	a.trace.set(false, errors.New("starting"))
	a.keyLog.set(false, errors.New("waiting for a broker"))
	if cfg.TLSKeysAttach && cfg.NoTrace {
		return nil, errors.New("agent: attaching the key-log agent needs the tracer: it loads into each broker the tracer follows")
	}
	if cfg.NoTrace {
		a.trace.set(false, errors.New("tracing is off (--no-trace)"))
	}
	id, err := resolveIdentity(cfg)
	if err != nil {
		a.logf("%v: labelled %s=%s %s=%s (give --broker-id and --cluster-id)", err, LabelBrokerID, id.BrokerID, LabelClusterID, id.ClusterID)
	}
	a.identity = id
	reg := prometheus.WrapRegistererWith(id.labels(), a.registry)
	if a.metrics, err = metrics.New(reg, cfg.Metrics); err != nil {
		return nil, err
	}
	if err := a.setViews(reg); err != nil {
		return nil, err
	}
	reg.MustRegister(metrics.NewHealthCollector(a.Health),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if cfg.SlowLog.Dir != "" {
		if a.slow, err = newSlowLog(cfg.SlowLog, a.segmentMeta); err != nil {
			return nil, err
		}
	}
	if cfg.Traces.Endpoint != "" {
		if a.slow == nil {
			return nil, errors.New("agent: traces of slow requests need the slow log (a directory for it)")
		}
		tc := cfg.Traces
		tc.Attributes = map[string]string{"kafka.broker.id": id.BrokerID, "kafka.cluster.id": id.ClusterID}
		if a.traces, err = traceexport.New(context.Background(), tc); err != nil {
			return nil, err
		}
		a.slow.explaining = true
	}
	return a, nil
}

// setViews makes the views the configuration names, registers their
// collectors, and has the decoder skip the extra fields no reader needs:
// none of the views on, nor the slow log, whose recordings keep every
// field for explain and report (their own clients and consumers views).
func (a *Agent) setViews(reg prometheus.Registerer) error {
	views, needs, err := newViews(&a.cfg)
	if err != nil {
		return err
	}
	a.views = views
	for _, v := range views {
		reg.MustRegister(v.Collector())
	}
	if a.cfg.SlowLog.Dir != "" {
		needs = wire.AllExtras
	}
	a.cfg.Wire.Skip |= wire.AllExtras &^ needs
	return nil
}

// Identity is the broker and cluster id every series is labelled with.
func (a *Agent) Identity() Identity { return a.identity }

// Registry is what /metrics serves.
func (a *Agent) Registry() *prometheus.Registry { return a.registry }

func (a *Agent) logf(format string, args ...any) {
	// Interface names, log dirs and errors from the host go into the
	// lines: escaped.
	fmt.Fprintf(a.cfg.Log, "agent: %s\n", output.Escape(fmt.Sprintf(format, args...)))
}

// Run runs the capture and the tracer until ctx ends; it returns nil
// then. Failing sources are retried, never fatal.
func (a *Agent) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { a.captureLoop(ctx) })
	if !a.cfg.NoTrace {
		wg.Go(func() { a.traceLoop(ctx) })
	}
	wg.Go(func() { a.housekeeping(ctx) })
	wg.Wait()
	var errs []error
	if a.slow != nil {
		jobs, err := a.slow.close(time.Now())
		errs = append(errs, err)
		if a.traces != nil {
			explainSlow(explain.Config{Slow: a.slow.cfg.Threshold}, a.traces, jobs)
		}
	}
	if a.traces != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		errs = append(errs, a.traces.Shutdown(sctx))
	}
	return errors.Join(errs...)
}

// housekeeping reranks the label values every minute, refreshes the
// tracer's counters every second and writes the slow log.
func (a *Agent) housekeeping(ctx context.Context) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	lastRerank := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			if now.Sub(lastRerank) >= time.Minute {
				a.metrics.Rerank()
				lastRerank = now
			}
			a.mu.Lock()
			if a.tracer != nil {
				if st, err := a.tracer.Stats(); err == nil {
					a.traceNow = st
				}
			}
			a.mu.Unlock()
			if a.slow != nil {
				jobs := a.slow.flush(now)
				if a.traces != nil && len(jobs) > 0 {
					explainSlow(explain.Config{Slow: a.slow.cfg.Threshold}, a.traces, jobs)
				}
			}
		}
	}
}

// captureBlockTimeout is how long the kernel holds a partly filled block
// of captured packets: a wake-up of the agent per block, not per 10 ms,
// halved its CPU at 10k requests/s. Full blocks are handed over at once,
// so it never makes the ring overflow; packets keep their kernel
// timestamps, and the slow log waits a second for its I/O anyway. Not
// longer: below ~20k requests/s the 4 MiB blocks do not fill within it,
// so it is also how much work each wake-up does at once, and 250 ms
// (a tenth less CPU) put the broker's p99 up by a millisecond at 9k
// requests/s on 2 cores, where the agent's bursts and the broker share
// them (bench/agent-results.md).
const captureBlockTimeout = 100 * time.Millisecond

// captureBlockBytes: 4 MiB blocks (16 in the 64 MiB ring) fill a quarter
// as often as 1 MiB ones at 10k requests/s; each wake-up of the agent
// also sets Go's monitor spinning for about a millisecond (-40% of its
// wake-ups and -27% of its context switches).
const captureBlockBytes = 4 << 20

// traceRingPoll is how often the tracer's rings are read, all together,
// their producers waking no one: a wake-up per 2 ms and ring was a third
// of the agent's CPU at 10k requests/s (see iotrace.Config.RingPoll).
// While the capture wakes for blocks of packets (at least every
// captureBlockTimeout under traffic), the rings are read at the end of
// those wake-ups instead (Agent.ringKick, capture.LiveConfig.OnWait).
const traceRingPoll = 50 * time.Millisecond

// captureLoop captures until ctx ends, opening the socket again after
// any failure. A packet socket reports its interface going down (and the
// same socket captures again when it comes back up, but this loop opens
// a new one anyway); a deleted interface's socket goes silent forever,
// and a new interface of the same name is a new ifindex: a watcher
// reopens the capture when the name's ifindex changes.
func (a *Agent) captureLoop(ctx context.Context) {
	for ctx.Err() == nil {
		err := a.captureOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		a.mu.Lock()
		a.capture.set(false, err)
		a.restarts["capture"]++
		a.mu.Unlock()
		a.logf("%v; opening the capture again in %v", err, a.cfg.Retry)
		sleep(ctx, a.cfg.Retry)
	}
}

// captureOnce runs one capture session; it returns why it ended.
func (a *Agent) captureOnce(ctx context.Context) error {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if a.cfg.Interface != "any" {
		ifc, err := net.InterfaceByName(a.cfg.Interface)
		if err != nil {
			return err
		}
		stop := make(chan struct{})
		defer close(stop)
		go watchInterface(a.cfg.Interface, ifc.Index, stop, cancel)
	}
	opened := false
	// onRequest copies what it keeps (the metrics and views their
	// figures, the slow log a clone): the decoder may reuse each event.
	wcfg := a.cfg.Wire
	wcfg.Recycle = true
	res, err := source.Live(sctx, capture.LiveConfig{Interface: a.cfg.Interface, Ports: a.cfg.Wire.Ports, BlockTimeout: captureBlockTimeout, BlockBytes: captureBlockBytes,
		OnWait: a.ringKick.Kick},
		source.Options{Wire: wcfg, Topics: a.topics, TLSKeyLog: a.cfg.TLSKeyLog, TLSKeyLogFromBroker: a.cfg.TLSKeysAttach, Tick: func(r source.Result, g wire.Gauges) {
			first := !opened
			opened = true
			a.mu.Lock()
			if first {
				a.capture.set(true, nil)
			}
			a.capNow, a.gauges = r, g
			a.mu.Unlock()
			if first {
				a.logf("capturing on %s, ports %v", a.cfg.Interface, a.cfg.Wire.Ports)
			}
		}}, a.onRequest, nil)
	a.mu.Lock()
	a.capDone.Add(res)
	a.capNow, a.gauges = source.Result{}, wire.Gauges{}
	a.mu.Unlock()
	if err == nil {
		if err = context.Cause(sctx); err == nil || err == context.Canceled {
			err = errors.New("capture ended")
		}
	}
	return err
}

// watchInterface cancels a capture when its interface is gone or has a
// new ifindex (deleted and created again). It asks the kernel for the
// name's index with one ioctl a second: net.InterfaceByName dumps and
// parses every interface and address over netlink, a third of an idle
// agent's CPU.
func watchInterface(name string, index int, stop <-chan struct{}, cancel context.CancelCauseFunc) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		fd = -1 // no socket to ask with: net.InterfaceByName each time
	} else {
		defer unix.Close(fd)
	}
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		got, err := interfaceIndex(fd, name)
		if err != nil {
			cancel(fmt.Errorf("interface %s is gone: %w", name, err))
			return
		}
		if got != index {
			cancel(fmt.Errorf("interface %s was created again (ifindex %d, was %d)", name, got, index))
			return
		}
	}
}

// interfaceIndex returns the index of the interface called name, asking
// through socket fd (SIOCGIFINDEX), or through net.InterfaceByName when fd
// is -1.
func interfaceIndex(fd int, name string) (int, error) {
	if fd < 0 {
		ifc, err := net.InterfaceByName(name)
		if err != nil {
			return 0, err
		}
		return ifc.Index, nil
	}
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return 0, err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFINDEX, ifr); err != nil {
		return 0, err
	}
	return int(ifr.Uint32()), nil
}

// onRequest takes each decoded request. The event is lent (the decoder's
// Config.Recycle): whatever keeps it past this call keeps a copy.
func (a *Agent) onRequest(r *event.Request) {
	a.metrics.Request(r)
	for _, v := range a.views {
		v.Add(r)
	}
	if a.slow != nil {
		a.slow.request(r)
	}
}

// traceLoop traces the broker until ctx ends: waits for one to appear,
// follows it across restarts, and starts again after failures.
func (a *Agent) traceLoop(ctx context.Context) {
	auto := a.cfg.PID == 0
	waiting := false
	for ctx.Err() == nil {
		pid := a.cfg.PID
		if auto {
			var err error
			if pid, err = iotrace.FindBroker(); err != nil {
				a.mu.Lock()
				a.trace.set(false, fmt.Errorf("waiting for a broker: %w", err))
				a.mu.Unlock()
				if !waiting {
					a.logf("no broker to trace (%v); waiting for one", err)
					waiting = true
				}
				sleep(ctx, a.cfg.Retry)
				continue
			}
		}
		waiting = false
		fc := iotrace.FollowConfig{
			Config: iotrace.Config{PID: pid, LogDirs: a.cfg.LogDirs, Journal: true, SyscallProbes: a.cfg.SyscallProbes, Waits: a.cfg.Waits && a.slow != nil,
				WaitMinLatency: time.Millisecond, RingPoll: traceRingPoll, Kick: &a.ringKick,
				RunQueue: a.cfg.Sched, RunQueueMin: a.cfg.RunQueueMin, Conns: a.cfg.Sched, Ports: a.cfg.Wire.Ports},
			OnAttach: a.onAttach,
			OnExit: func(pid int) {
				a.mu.Lock()
				a.trace.set(false, fmt.Errorf("broker pid %d exited; waiting for the next", pid))
				a.mu.Unlock()
				a.logf("broker pid %d exited", pid)
			},
			OnDetach: a.onDetach,
		}
		if auto {
			fc.Find = iotrace.FindBroker
		}
		_, err := iotrace.Follow(ctx, fc, a.traceHandlers())
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			err = fmt.Errorf("broker pid %d exited", pid)
		}
		a.mu.Lock()
		a.trace.set(false, err)
		a.mu.Unlock()
		a.logf("tracer: %v; trying again in %v", err, a.cfg.Retry)
		sleep(ctx, a.cfg.Retry)
	}
}

func (a *Agent) onAttach(t *iotrace.Tracer) {
	b := recording.BrokerOf(t.PID(), t.LogDirs())
	if b.NodeID != nil && fmt.Sprint(*b.NodeID) != a.identity.BrokerID {
		a.logf("broker pid %d is node %d, but the metrics are labelled %s=%s (fixed at start)", t.PID(), *b.NodeID, LabelBrokerID, a.identity.BrokerID)
	}
	// Topic ids of Produce v13+ and Fetch v13+ from partition.metadata.
	if ids, err := logdir.TopicIDs(hostinfo.AllSeenBy(t.PID(), t.LogDirs())...); err == nil {
		for id, name := range ids {
			a.topics.Add(id, name)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.broker.PID != 0 {
		a.restarts["trace"]++
	}
	a.tracer, a.traceNow, a.broker = t, iotrace.Stats{}, b
	clear(a.netTIDs)
	if a.cfg.Sched {
		ctx, cancel := context.WithCancel(context.Background())
		a.stopThrottle = cancel
		go a.sampleThrottle(ctx, t.PID())
	}
	a.clock = recording.Clock{CaptureClock: "CLOCK_REALTIME (kernel packet timestamps)",
		TraceClock:         "CLOCK_MONOTONIC, converted to CLOCK_REALTIME",
		TraceClockOffsetNs: int64(t.ClockOffset()), TraceClockUncertaintyNs: int64(t.ClockUncertainty())}
	a.trace.set(true, nil)
	if a.cfg.TLSKeysAttach {
		go a.attachKeyLog(t.PID())
	}
	a.logf("tracing broker pid %d (Kafka %s), log dirs %v; %s", t.PID(), orUnknown(b.Version), t.LogDirs(), t.Mode())
}

func (a *Agent) onDetach(s iotrace.Session) {
	a.mu.Lock()
	defer a.mu.Unlock()
	iotrace.AddStats(&a.traceDone, s.Stats)
	a.tracer, a.traceNow = nil, iotrace.Stats{}
	if a.stopThrottle != nil {
		a.stopThrottle()
		a.stopThrottle = nil
	}
}

// sampleThrottle samples the CPU throttling of pid's cgroup and its
// ancestors until ctx ends (the broker detached); a broker without a
// cgroup CPU controller is not an error worth more than a line.
func (a *Agent) sampleThrottle(ctx context.Context, pid int) {
	_, err := cgroupcpu.Run(ctx, pid, cgroupcpu.DefaultInterval, func(t *event.CPUThrottle) error {
		a.metrics.Throttle(t)
		a.mu.Lock()
		a.throttles++
		a.mu.Unlock()
		if a.slow != nil {
			a.slow.event(t.Start, t.End, t)
		}
		return nil
	})
	if err != nil && ctx.Err() == nil {
		a.logf("cgroup CPU throttling of pid %d: %v", pid, err)
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "version unknown"
	}
	return s
}

func (a *Agent) traceHandlers() iotrace.Handlers {
	m := a.metrics
	keep := func(start, end time.Time, ev any) {
		if a.slow != nil {
			a.slow.event(start, end, ev)
		}
	}
	return iotrace.Handlers{
		Write:  func(w *event.Write) error { m.Write(w); keep(w.Start, w.End, w); return nil },
		Commit: func(c *event.JournalCommit) error { m.Commit(c); keep(c.Start, c.End, c); return nil },
		Sync:   func(f *event.FileSync) error { m.Sync(f); keep(f.Start, f.End, f); return nil },
		Block:  func(b *event.BlockIO) error { m.Block(b); keep(b.Start, b.End, b); return nil },
		Wait:   func(k *event.KernelWait) error { keep(k.Start, k.End, k); return nil },
		RunDelay: func(d *event.RunDelay) error {
			a.mu.Lock()
			network := a.netTIDs[d.TID]
			a.mu.Unlock()
			m.RunDelay(d, metrics.ThreadClass(d.Thread, network))
			keep(d.Start, d.End, d)
			return nil
		},
		Wakeup: func(u *event.Wakeup) error { keep(u.Start, u.End, u); return nil },
		ConnThread: func(c *event.ConnThread) error {
			a.mu.Lock()
			a.netTIDs[c.TID] = true
			a.mu.Unlock()
			if a.slow != nil {
				a.slow.connThread(c)
			}
			return nil
		},
	}
}

// segmentMeta is the agent's view of the host and broker for a new
// slow-log segment.
func (a *Agent) segmentMeta() recording.Meta {
	a.mu.Lock()
	defer a.mu.Unlock()
	m := recording.Meta{Tool: "kscope agent", Kernel: hostinfo.Kernel(), Interface: a.cfg.Interface,
		Ports: a.cfg.Wire.Ports, Broker: a.broker, Clock: a.clock}
	m.Host, _ = os.Hostname()
	tot, tr := a.totals()
	w := tot.Wire
	m.Capture = recording.CaptureCounters{Packets: tot.Capture.Packets, KernelDrops: tot.Capture.KernelDrops,
		Requests: w.Requests, Answered: w.Responses, Unanswered: w.Unanswered, SkippedBytes: w.SkippedBytes, Gaps: w.Gaps,
		DecodeErrors: w.DecodeErrors}
	m.Trace = recording.TraceCounters{Writes: int64(tr.Reported), JournalEvents: int64(tr.JournalEvents),
		KernelWaits: int64(tr.WaitEvents), WaitRingbufDrops: int64(tr.WaitRingbufDrops), OtherFiles: int64(tr.OtherFiles),
		Unnamed: int64(tr.Unnamed), RingbufDrops: int64(tr.RingbufDrops), JournalRingbufDrops: int64(tr.JournalRingbufDrops),
		HistFull: int64(tr.HistFull), StartFull: int64(tr.StartFull), Mode: iotrace.Mode{Tracepoints: true}.String()}
	if a.cfg.Sched {
		m.Sched = &recording.SchedCounters{RunDelays: int64(tr.RunDelayEvents), RunDelayRingbufDrops: int64(tr.RunDelayRingbufDrops),
			RunDelayStartFull: int64(tr.RunDelayStartFull), MinRunDelayNs: int64(a.cfg.RunQueueMin), Wakeups: int64(tr.WakeupEvents),
			ConnThreads: int64(tr.ConnEvents), ConnRingbufDrops: int64(tr.ConnRingbufDrops), Throttles: a.throttles,
			JVMPauseError: "the agent does not turn on the JVM's log: record with kscope record for gc-pause and safepoint"}
	}
	return m
}

// Health is the agent's state for /metrics.
func (a *Agent) Health() metrics.Health {
	// The slow log first: it calls segmentMeta (a.mu) under its own lock,
	// so a.mu is never held while taking it.
	var slow slowLogStats
	if a.slow != nil {
		slow = a.slow.stats()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	tot, tr := a.totals()
	h := metrics.Health{
		CaptureUp: a.capture.Up, TraceUp: a.trace.Up, BrokerPID: a.broker.PID,
		Packets: tot.Capture.Packets, KernelDrops: tot.Capture.KernelDrops,
		SkippedBytes: tot.Wire.SkippedBytes, Gaps: tot.Wire.Gaps, DecodeErrors: tot.Wire.DecodeErrors,
		BatchErrors: tot.Wire.BatchErrors, Evicted: tot.Wire.Evicted, IDsNotHeld: tot.Wire.IDsNotHeld,
		Connections: a.gauges.Connections, InFlight: a.gauges.InFlight,
		RingbufDrops: map[string]int64{"writes": int64(tr.RingbufDrops), "journal": int64(tr.JournalRingbufDrops),
			"waits": int64(tr.WaitRingbufDrops), "run_delays": int64(tr.RunDelayRingbufDrops), "conns": int64(tr.ConnRingbufDrops)},
		Restarts:      map[string]int64{"capture": a.restarts["capture"], "trace": a.restarts["trace"]},
		TracedEvents:  int64(tr.Events + tr.JournalEvents + tr.WaitEvents),
		SlowRequests:  slow.Written,
		SlowDropped:   slow.Dropped,
		SlowLogErrors: slow.Errors,
		TLSConnections: map[string]int64{"decrypted": tot.Wire.TLSDecrypted, "handshake_only": tot.Wire.TLSHandshakeOnly,
			"decrypted_then_stopped": tot.Wire.TLSDecryptedThenStopped, "no_keys": tot.Wire.TLSNoKeys,
			"failed": tot.Wire.TLSFailed, "not_tls": tot.Wire.TLSNotTLS, "lost": tot.Wire.TLSLost},
	}
	if !a.trace.Up {
		h.BrokerPID = 0
	}
	return h
}

// totals are the capture's and the tracer's counters since the start.
// a.mu must be held.
func (a *Agent) totals() (source.Result, iotrace.Stats) {
	var tot source.Result
	tot.Add(a.capDone)
	tot.Add(a.capNow)
	var tr iotrace.Stats
	iotrace.AddStats(&tr, a.traceDone)
	iotrace.AddStats(&tr, a.traceNow)
	return tot, tr
}

// Status is what /healthz answers, as JSON.
type Status struct {
	Status   string         `json:"status"` // ok or degraded
	Degraded []string       `json:"degraded,omitempty"`
	Uptime   string         `json:"uptime"`
	Capture  componentState `json:"capture"`
	Trace    componentState `json:"trace"`
	// TLSKeys is the key-log agent's attach to the broker, with
	// --tls-keys attach.
	TLSKeys *componentState `json:"tls_keys,omitempty"`
	// BrokerPID is the traced broker (0: none).
	BrokerPID int `json:"broker_pid"`
	// Losses so far: packets the kernel dropped, events lost in full
	// ring buffers, slow requests over the log's rate.
	CaptureDrops int64  `json:"capture_drops"`
	RingbufDrops int64  `json:"ringbuf_drops"`
	SlowDropped  int64  `json:"slow_dropped"`
	SlowLog      string `json:"slow_log,omitempty"` // the segment being written
	SlowLogError string `json:"slow_log_error,omitempty"`
}

// Status says what is degraded.
func (a *Agent) Status() Status {
	h := a.Health()
	var slow slowLogStats
	if a.slow != nil {
		slow = a.slow.stats()
	}
	a.mu.Lock()
	s := Status{Status: "ok", Uptime: time.Since(a.started).Round(time.Second).String(),
		Capture: a.capture, Trace: a.trace, BrokerPID: h.BrokerPID, CaptureDrops: h.KernelDrops, SlowDropped: h.SlowDropped}
	if !a.trace.Up {
		s.BrokerPID = 0 // consistent with Trace: h was read a moment before
	} else {
		s.BrokerPID = a.broker.PID
	}
	notrace := a.cfg.NoTrace
	if a.cfg.TLSKeysAttach {
		k := a.keyLog
		s.TLSKeys = &k
	}
	a.mu.Unlock()
	for _, v := range h.RingbufDrops {
		s.RingbufDrops += v
	}
	if !s.Capture.Up {
		s.Degraded = append(s.Degraded, "capture: "+s.Capture.Error)
	}
	if !s.Trace.Up && !notrace {
		s.Degraded = append(s.Degraded, "trace: "+s.Trace.Error)
	}
	if s.TLSKeys != nil && !s.TLSKeys.Up {
		s.Degraded = append(s.Degraded, "tls keys: "+s.TLSKeys.Error)
	}
	s.SlowLog, s.SlowLogError = slow.Segment, slow.LastError
	if slow.LastError != "" && time.Since(slow.LastErrorAt) < time.Minute {
		s.Degraded = append(s.Degraded, "slow log: "+slow.LastError)
	}
	if len(s.Degraded) > 0 {
		s.Status = "degraded"
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
