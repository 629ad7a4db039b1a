package lab

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotRunning is returned by Attach when no broker runs for a dir.
var ErrNotRunning = errors.New("lab: broker not running")

// ErrKilled is wrapped in Stop's error when a node did not exit within
// the grace after SIGTERM and was SIGKILLed: stopped, but without the
// controlled shutdown (its segments not flushed, its indexes not trimmed).
var ErrKilled = errors.New("killed without exiting on SIGTERM")

// stopGrace is how long Stop waits after SIGTERM (a controlled shutdown
// takes ~2 s) before SIGKILL.
const stopGrace = 20 * time.Second

// Broker is a running KRaft node (a combined broker+controller): a
// single-node cluster of its own, or one node of a Cluster.
type Broker struct {
	st  state
	dir string

	// done is closed when the child exits; nil for an attached broker,
	// which is not our child and can only be polled.
	done    chan struct{}
	waitErr error // the child's exit status, valid once done is closed

	stopOnce sync.Once
	stopErr  error
}

// StartBroker formats storage (unless already formatted), starts the
// broker as a child process and returns once it answers Metadata, or
// fails after cfg.StartTimeout. ctx bounds only the startup: cancelling it
// later does not stop the broker; Stop does. On formatted storage (a
// restart) the ports, cluster id and Kafka release of the last start are
// reused.
func StartBroker(ctx context.Context, cfg BrokerConfig) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	nodes, err := startNodes(ctx, []BrokerConfig{cfg}, cfg.Version, cfg.LibsDir, cfg.StartTimeout, nil)
	if err != nil {
		return nil, err
	}
	return nodes[0], nil
}

// startNodes starts the nodes of one cluster, node i+1 from cfgs[i]
// (withDefaults applied) at places[i] (nil: all on 127.0.0.1 in the root
// namespace), and returns once every one of them answers Metadata listing
// all len(cfgs) brokers. Fresh storage is formatted first, all nodes with
// one cluster id; formatted storage must be so on every node, and is
// restarted with its ports, cluster id and release.
func startNodes(ctx context.Context, cfgs []BrokerConfig, version, libs string, timeout time.Duration, places []nodePlace) ([]*Broker, error) {
	if _, err := JavaPath(); err != nil {
		return nil, err
	}
	n := len(cfgs)
	prev := make([]*state, n)
	formattedNodes, fresh, fixedPorts := 0, true, false
	for i, cfg := range cfgs {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("lab: broker dir: %w", err)
		}
		formatted, f, err := storageState(cfg.LogDirs)
		if err != nil {
			return nil, err
		}
		fresh = fresh && f
		fixedPorts = fixedPorts || cfg.Port != 0 || cfg.Security != nil && (cfg.Security.SSLPort != 0 || cfg.Security.SASLSSLPort != 0)
		if !formatted {
			continue
		}
		formattedNodes++
		st, err := readState(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("lab: storage in %v is formatted but: %w", cfg.LogDirs, err)
		}
		if BrokerAlive(st.PID) {
			return nil, fmt.Errorf("lab: broker in %s already running (pid %d)", cfg.Dir, st.PID)
		}
		prev[i] = &st
	}
	if formattedNodes != 0 && formattedNodes != n {
		return nil, fmt.Errorf("lab: only %d of %d nodes have formatted storage (remove the dirs to start afresh)", formattedNodes, n)
	}
	// Outside the start timeout: a first run of a release downloads ~45 MB
	// of jars.
	version, libs, err := resolveRelease(ctx, version, libs, prev[0], cfgs[0].Dir)
	if err != nil {
		return nil, err
	}
	if cfgs[0].Security != nil {
		if err := checkSecurityVersion(version); err != nil {
			return nil, err
		}
	}
	if places == nil {
		places = make([]nodePlace, n)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for attempt := 1; ; attempt++ {
		nodes, err := startOnce(ctx, cfgs, version, libs, prev, places)
		if err == nil {
			return nodes, nil
		}
		// A picked port can be taken by someone else before the JVM binds
		// it. Retry with new ports, but only when we own the storage (it
		// did not exist before this call): it must be re-formatted since
		// the controller endpoints are written into it.
		bind := false
		for _, cfg := range cfgs {
			bind = bind || isBindFailure(cfg.Dir)
		}
		if attempt >= 3 || !fresh || fixedPorts || !bind || ctx.Err() != nil {
			return nil, err
		}
		for _, cfg := range cfgs {
			for _, d := range cfg.LogDirs {
				if rerr := removeContents(d); rerr != nil {
					return nil, errors.Join(err, fmt.Errorf("lab: reset %s: %w", d, rerr))
				}
			}
		}
	}
}

// resolveRelease settles which Kafka release runs and from which jars: the
// release of libs when given, else version, else the one the storage was
// formatted with (prev), else KafkaVersion. A restart never changes the
// release of formatted storage.
func resolveRelease(ctx context.Context, version, libs string, prev *state, dir string) (string, string, error) {
	if libs != "" {
		lv, err := LibsVersion(libs)
		switch {
		case err == nil && version != "" && lv != version:
			return "", "", fmt.Errorf("lab: Version %s but LibsDir %s holds Kafka %s", version, libs, lv)
		case err == nil:
			version = lv
		case version == "":
			version = KafkaVersion // jars not named by release: assume the pinned one
		}
	} else {
		if version == "" && prev != nil {
			version = prev.version()
		}
		if version == "" {
			version = KafkaVersion
		}
	}
	if err := CheckVersion(version); err != nil {
		return "", "", err
	}
	if prev != nil && prev.version() != version {
		return "", "", fmt.Errorf("lab: storage in %s was formatted by Kafka %s, not %s (use another dir, or remove it to start afresh)",
			dir, prev.version(), version)
	}
	if libs == "" {
		var err error
		if libs, err = EnsureLibsVersion(ctx, version); err != nil {
			return "", "", err
		}
	}
	return version, libs, nil
}

// storageState reports whether all log dirs are formatted (meta.properties)
// and whether all of them are missing or empty (so StartBroker owns them;
// empty: a file system of its own mounted on the log dir, ClusterConfig.FS).
func storageState(logDirs []string) (formatted, fresh bool, err error) {
	n, missing := 0, 0
	for _, d := range logDirs {
		if entries, err := os.ReadDir(d); errors.Is(err, os.ErrNotExist) || (err == nil && len(entries) == 0) {
			missing++
		}
		if fileExists(filepath.Join(d, "meta.properties")) {
			n++
		}
	}
	if n != 0 && n != len(logDirs) {
		return false, false, fmt.Errorf("lab: only %d of %d log dirs %v are formatted", n, len(logDirs), logDirs)
	}
	return n > 0, missing == len(logDirs), nil
}

// removeContents empties dir but keeps it: it may be a mount point.
func removeContents(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func isBindFailure(dir string) bool {
	return strings.Contains(tailFile(filepath.Join(dir, OutFile), 200), "Address already in use")
}

// pickPorts returns every node's PLAINTEXT and CONTROLLER port: the
// configured port, else the previous start's (the controller port always:
// it is part of the storage; the client port when still free), else a
// free one.
func pickPorts(cfgs []BrokerConfig, prev []*state) (ports, cports []int, err error) {
	n := len(cfgs)
	ports, cports = make([]int, n), make([]int, n)
	var taken []int
	for i, cfg := range cfgs {
		ports[i] = cfg.Port
		if prev[i] != nil {
			if cports[i], err = portOf(prev[i].ControllerAddr); err != nil {
				return nil, nil, err
			}
			if p, err := portOf(prev[i].Addr); err == nil && ports[i] == 0 && !slices.Contains(taken, p) && checkPortFree(p) == nil {
				ports[i] = p
			}
		}
		if cfg.Port != 0 {
			if err := checkPortFree(cfg.Port); err != nil {
				return nil, nil, err
			}
		}
		for _, p := range []int{ports[i], cports[i]} {
			if p != 0 {
				if slices.Contains(taken, p) {
					return nil, nil, fmt.Errorf("lab: port %d given to two listeners", p)
				}
				taken = append(taken, p)
			}
		}
	}
	missing := 0
	for i := range cfgs {
		for _, p := range []int{ports[i], cports[i]} {
			if p == 0 {
				missing++
			}
		}
	}
	if missing == 0 {
		return ports, cports, nil
	}
	free, err := freePorts(missing, taken...)
	if err != nil {
		return nil, nil, err
	}
	for i := range cfgs {
		for _, p := range []*int{&ports[i], &cports[i]} {
			if *p == 0 {
				*p, free = free[0], free[1:]
			}
		}
	}
	return ports, cports, nil
}

// netnsPorts returns the ports of nodes each alone in its namespace: the
// configured port and, for the controller, the next one, or the one of the
// previous start (it is part of the quorum's state). Nothing else listens
// there, so there is nothing to check or pick.
func netnsPorts(cfgs []BrokerConfig, prev []*state) (ports, cports []int, err error) {
	ports, cports = make([]int, len(cfgs)), make([]int, len(cfgs))
	for i, cfg := range cfgs {
		ports[i], cports[i] = cfg.Port, cfg.Port+1
		if prev[i] != nil {
			if cports[i], err = portOf(prev[i].ControllerAddr); err != nil {
				return nil, nil, err
			}
		}
		if cports[i] == ports[i] {
			return nil, nil, fmt.Errorf("lab: node %d: PLAINTEXT and CONTROLLER both on port %d", i+1, ports[i])
		}
	}
	return ports, cports, nil
}

func startOnce(ctx context.Context, cfgs []BrokerConfig, version, libs string, prev []*state, places []nodePlace) ([]*Broker, error) {
	n := len(cfgs)
	pick := pickPorts
	if places[0].Netns != "" {
		pick = netnsPorts
	}
	ports, cports, err := pick(cfgs, prev)
	if err != nil {
		return nil, err
	}
	var sports []securePorts
	if places[0].Netns != "" {
		sports, err = netnsSecurePorts(cfgs, ports, cports)
	} else {
		sports, err = pickSecurePorts(cfgs, prev, append(slices.Clone(ports), cports...))
	}
	if err != nil {
		return nil, err
	}
	clusterID := ""
	if prev[0] != nil {
		clusterID = prev[0].ClusterID
	} else if clusterID, err = NewClusterID(); err != nil {
		return nil, err
	}
	hosts, caddrs := make([]string, n), make([]string, n)
	for i := range cfgs {
		hosts[i] = cmp.Or(places[i].IP, "127.0.0.1")
		caddrs[i] = nodeAddr(hosts[i], cports[i])
	}
	voters := ""
	if !dynamicQuorum(version, n) {
		voters = votersAt(caddrs)
	}
	tlss, err := ensureTLS(ctx, cfgs, hosts)
	if err != nil {
		return nil, err
	}
	nodes := make([]*Broker, n)
	jvmFlags := make([]string, n)
	for i, cfg := range cfgs {
		spec := nodeSpec{cfg: cfg, id: i + 1, n: n, version: version, port: ports[i], cport: cports[i], host: places[i].IP, voters: voters,
			ssl: sports[i].ssl, sasl: sports[i].sasl, tls: tlss[i]}
		if nodes[i], jvmFlags[i], err = newNode(spec, places[i], clusterID, libs); err != nil {
			return nil, err
		}
	}
	if prev[0] == nil {
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i, cfg := range cfgs {
			var scram []User
			if t := tlss[i]; t != nil {
				scram = []User{t.shared.users.SCRAM}
			}
			wg.Go(func() {
				errs[i] = formatStorage(ctx, cfg.Dir, libs, clusterID, filepath.Join(cfg.Dir, PropertiesFile), voters == "", scram)
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	if err := runNodes(ctx, nodes, cfgs, jvmFlags); err != nil {
		return nil, err
	}
	if err := readySecure(ctx, nodes, tlss, prev[0] == nil); err != nil {
		stopNodes(nodes)
		return nil, err
	}
	return nodes, nil
}

// readySecure waits until the SSL and SASL_SSL listeners of every node
// with Security answer (the SCRAM user logging in), after storing the
// SCRAM credential unless the storage was formatted with it by this start
// (formatted), and writes the client properties files.
func readySecure(ctx context.Context, nodes []*Broker, tlss []*nodeTLS, formatted bool) error {
	i := slices.IndexFunc(tlss, func(t *nodeTLS) bool { return t != nil })
	if i < 0 {
		return nil
	}
	if !formatted {
		if err := upsertSCRAM(ctx, nodes[i].Addr(), tlss[i].shared.users.SCRAM); err != nil {
			return err
		}
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, b := range nodes {
		if tlss[i] != nil {
			wg.Go(func() { errs[i] = waitSecure(ctx, b, tlss[i].shared.users, b.done) })
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return writeClientFiles(nodes)
}

// newNode writes node spec's server.properties and logging config and
// returns its Broker (not started) and the JVM flag naming that config.
func newNode(spec nodeSpec, pl nodePlace, clusterID, libs string) (*Broker, string, error) {
	cfg := spec.cfg
	requestLog := ""
	if cfg.RequestLog {
		requestLog = filepath.Join(cfg.Dir, RequestLogFile)
	}
	propsPath := filepath.Join(cfg.Dir, PropertiesFile)
	props := []byte(serverProperties(spec))
	if spec.tls != nil {
		// Key store and SASL passwords: for the broker's eyes only.
		if err := writeSecret(propsPath, props); err != nil {
			return nil, "", err
		}
	} else if err := os.WriteFile(propsPath, props, 0o644); err != nil {
		return nil, "", fmt.Errorf("lab: write server.properties: %w", err)
	}
	name, content, flag := loggingConfig(spec.version, cfg.Dir, requestLog)
	if err := os.WriteFile(filepath.Join(cfg.Dir, name), []byte(content), 0o644); err != nil {
		return nil, "", fmt.Errorf("lab: write %s: %w", name, err)
	}
	host := cmp.Or(spec.host, "127.0.0.1")
	b := &Broker{
		dir: cfg.Dir,
		st: state{
			NodeID:         spec.id,
			Version:        spec.version,
			Addr:           nodeAddr(host, spec.port),
			ControllerAddr: nodeAddr(host, spec.cport),
			ClusterID:      clusterID,
			LogDirs:        cfg.LogDirs,
			RequestLog:     requestLog,
			Libs:           libs,
			Netns:          pl.Netns,
			HostIf:         pl.HostIf,
			MountPoint:     pl.MountPoint,
			Device:         pl.Device,
			FSType:         pl.FSType,
		},
	}
	if spec.tls != nil {
		b.st.SSLAddr, b.st.SASLSSLAddr = nodeAddr(host, spec.ssl), nodeAddr(host, spec.sasl)
		b.st.TLSDir = spec.tls.shared.dir
	}
	return b, flag, nil
}

// runNodes spawns every node and waits until each answers Metadata
// listing all of them; on an error every node spawned is stopped.
func runNodes(ctx context.Context, nodes []*Broker, cfgs []BrokerConfig, jvmFlags []string) error {
	n := len(nodes)
	stopAll := func() { stopNodes(nodes) }
	for i, b := range nodes {
		err := b.spawn(cfgs[i], jvmFlags[i], filepath.Join(cfgs[i].Dir, PropertiesFile))
		if err == nil {
			err = writeState(b.dir, b.st)
		}
		if err != nil {
			stopAll()
			return err
		}
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, b := range nodes {
		wg.Go(func() {
			err := waitReady(ctx, b.st.Addr, b.st.NodeID, n, b.done)
			if err == nil {
				return
			}
			select {
			case <-b.done:
				err = fmt.Errorf("%w (%v)", err, b.waitErr)
			default:
			}
			errs[i] = fmt.Errorf("lab: broker %d on %s not ready: %w\n--- %s (tail) ---\n%s",
				b.st.NodeID, b.st.Addr, err, b.OutPath(), tailFile(b.OutPath(), 30))
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		stopAll()
		return err
	}
	return nil
}

// stopNodes stops every node this process spawned, all at once.
func stopNodes(nodes []*Broker) {
	var wg sync.WaitGroup
	for _, b := range nodes {
		if b != nil && b.done != nil {
			wg.Go(func() { _ = b.Stop() })
		}
	}
	wg.Wait()
}

// formatStorage runs `kafka.tools.StorageTool format`, which KRaft
// requires before first start: it writes meta.properties and, with
// standalone (Kafka 4 single node, `--standalone`), the KRaft bootstrap
// checkpoint naming this node the only controller voter. Without it the
// voters come from controller.quorum.voters in the properties. Each of
// scram gets its SCRAM credential into the first metadata (`--add-scram`);
// their passwords are kept out of format.out and the error.
func formatStorage(ctx context.Context, dir, libs, clusterID, propsPath string, standalone bool, scram []User) error {
	args := []string{"format", "-t", clusterID, "-c", propsPath}
	if standalone {
		args = append(args, "--standalone")
	}
	for _, u := range scram {
		args = append(args, "--add-scram", scramArg(u))
	}
	cmd, err := JavaCommand(ctx, libs, ToolJVMArgs(), "kafka.tools.StorageTool", args...)
	if err != nil {
		return fmt.Errorf("lab: format storage: %w", err)
	}
	outPath := filepath.Join(dir, FormatOutFile)
	out, err := os.Create(outPath)
	if err != nil {
		return fmt.Errorf("lab: format storage: %w", err)
	}
	defer out.Close()
	cmd.Stdout, cmd.Stderr = out, out
	err = cmd.Run()
	if rerr := redactFile(outPath, scram); rerr != nil {
		return errors.Join(err, rerr)
	}
	if err != nil {
		return fmt.Errorf("lab: format storage in %s: %w\n%s", dir, err, tailFile(outPath, 20))
	}
	return nil
}

func (b *Broker) spawn(cfg BrokerConfig, logFlag, propsPath string) error {
	java, err := JavaPath()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(b.OutPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("lab: open broker.out: %w", err)
	}
	// The child gets its own copy of the descriptor.
	defer out.Close()
	fmt.Fprintf(out, "=== kscope lab: starting Kafka %s broker %d %s at %s ===\n",
		b.st.Version, b.st.NodeID, b.st.Addr, time.Now().Format(time.RFC3339))
	args := append([]string{"-Xmx" + strconv.Itoa(cfg.HeapMB) + "m"}, cfg.JVMArgs...)
	args = append(args,
		"-XX:+ExitOnOutOfMemoryError",
		"-Djava.awt.headless=true",
		logFlag,
		"-cp", Classpath(b.st.Libs),
		brokerMainClass, propsPath)
	name := java
	if b.st.Netns != "" {
		// ip execs java inside the namespace: the pid stays java's, and
		// the parent-death signal and process group still apply to it.
		if name, err = lookTool("ip"); err != nil {
			return err
		}
		args = append([]string{"netns", "exec", b.st.Netns, java}, args...)
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = cfg.Dir
	cmd.Stdout, cmd.Stderr = out, out
	b.done = make(chan struct{})
	var exited <-chan error
	if cfg.Detach {
		// Own session, no parent-death signal: the broker outlives us
		// and our terminal.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			return fmt.Errorf("lab: start broker: %w", err)
		}
		ch := make(chan error, 1)
		go func() { ch <- cmd.Wait() }()
		exited = ch
	} else {
		// Own process group (no terminal signals), killed when we die.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if exited, err = StartChild(cmd); err != nil {
			return fmt.Errorf("lab: start broker: %w", err)
		}
	}
	b.st.PID = cmd.Process.Pid
	b.st.StartedAt = time.Now()
	go func() {
		b.waitErr = <-exited
		close(b.done)
	}()
	return nil
}

// Attach returns the broker that a StartBroker (possibly in another
// process) left running in dir, or an error wrapping ErrNotRunning.
func Attach(dir string) (*Broker, error) {
	b, err := attachNode(dir)
	if err != nil {
		return nil, err
	}
	if !b.Running() {
		return nil, fmt.Errorf("%w in %s", ErrNotRunning, b.dir)
	}
	return b, nil
}

// attachNode returns the broker whose state is in dir, running or not.
func attachNode(dir string) (*Broker, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("lab: attach: %w", err)
	}
	st, err := readState(abs)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w in %s", ErrNotRunning, abs)
		}
		return nil, err
	}
	return &Broker{st: st, dir: abs}, nil
}

// Addr is the PLAINTEXT bootstrap address, "127.0.0.1:PORT", or with
// ClusterConfig.Netns "NODEIP:PORT" (reached through the cluster's
// bridge).
func (b *Broker) Addr() string { return b.st.Addr }

// IP is the address the broker listens on: 127.0.0.1, or its own address
// in its namespace.
func (b *Broker) IP() string {
	host, _, err := net.SplitHostPort(b.st.Addr)
	if err != nil {
		return ""
	}
	return host
}

// Netns is the network namespace the broker runs in, "" for the root one.
func (b *Broker) Netns() string { return b.st.Netns }

// HostIf is the root namespace's end of the broker's veth pair, a port of
// the cluster's bridge, "" without Netns. Every packet to or from the
// broker (clients and replication) crosses it: the place to capture the
// broker's traffic, or to shape it.
func (b *Broker) HostIf() string { return b.st.HostIf }

// MountPoint is where the broker's own file system is mounted (its log
// dir), "" without ClusterConfig.FS.
func (b *Broker) MountPoint() string { return b.st.MountPoint }

// Device is the loop device of the broker's own file system (e.g.
// /dev/loop5) as of its last start, "" without ClusterConfig.FS.
func (b *Broker) Device() string { return b.st.Device }

// FSType is the type of the broker's own file system ("ext4", "xfs"), ""
// without ClusterConfig.FS.
func (b *Broker) FSType() string { return b.st.FSType }

// NodeID is the broker's node.id: 1 for a single broker, 1..N in a
// Cluster.
func (b *Broker) NodeID() int {
	if b.st.NodeID == 0 {
		return nodeID // state written before clusters existed
	}
	return b.st.NodeID
}

// Version is the Apache Kafka release the broker runs, e.g. "4.1.2".
func (b *Broker) Version() string { return b.st.version() }

// ControllerAddr is the CONTROLLER listener address.
func (b *Broker) ControllerAddr() string { return b.st.ControllerAddr }

// PID is the broker JVM's process id.
func (b *Broker) PID() int { return b.st.PID }

// Dir is the broker's working dir.
func (b *Broker) Dir() string { return b.dir }

// ClusterID is the KRaft cluster id the storage was formatted with.
func (b *Broker) ClusterID() string { return b.st.ClusterID }

// LogDirs are the broker's data dirs (log.dirs).
func (b *Broker) LogDirs() []string { return append([]string(nil), b.st.LogDirs...) }

// LibsDir is the jars dir the broker runs from (for Java tools).
func (b *Broker) LibsDir() string { return b.st.Libs }

// RequestLogPath is Dir/kafka-request.log, or "" without RequestLog.
func (b *Broker) RequestLogPath() string { return b.st.RequestLog }

// OutPath is the broker's stdout/stderr file, Dir/broker.out.
func (b *Broker) OutPath() string { return filepath.Join(b.dir, OutFile) }

// Running reports whether the broker process is alive.
func (b *Broker) Running() bool {
	if b.done != nil {
		select {
		case <-b.done:
			return false
		default:
			return true
		}
	}
	return BrokerAlive(b.st.PID)
}

// Stop sends SIGTERM (a controlled shutdown), waits up to 20 s, then
// SIGKILLs. It is idempotent; an already exited broker is not an error.
func (b *Broker) Stop() error {
	b.stopOnce.Do(func() { b.stopErr = b.stop() })
	return b.stopErr
}

func (b *Broker) stop() error {
	pid := b.st.PID
	killed := false
	if b.done != nil {
		select {
		case <-b.done:
		default:
			_ = syscall.Kill(pid, syscall.SIGTERM)
			select {
			case <-b.done:
			case <-time.After(stopGrace):
				killed = true
				_ = syscall.Kill(-pid, syscall.SIGKILL) // the whole process group
				<-b.done
			}
		}
	} else if BrokerAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !WaitGone(pid, stopGrace) {
			killed = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !WaitGone(pid, 5*time.Second) {
				return fmt.Errorf("lab: stop broker pid %d: still alive after SIGKILL", pid)
			}
		}
	}
	st := b.st
	st.PID = 0
	if err := writeState(b.dir, st); err != nil {
		return err
	}
	if killed {
		return fmt.Errorf("lab: stop broker pid %d: %w after %v", pid, ErrKilled, stopGrace)
	}
	return nil
}
