package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrNotRunning is returned by Attach when no broker runs for a dir.
var ErrNotRunning = errors.New("lab: broker not running")

// stopGrace is how long Stop waits after SIGTERM (a controlled shutdown
// takes ~2 s) before SIGKILL.
const stopGrace = 20 * time.Second

// Broker is a running single-node KRaft broker.
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
// restart) the ports and cluster id of the last start are reused.
func StartBroker(ctx context.Context, cfg BrokerConfig) (*Broker, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if _, err := JavaPath(); err != nil {
		return nil, err
	}
	libs := cfg.LibsDir
	if libs == "" {
		// Outside StartTimeout: a first run downloads ~45 MB of jars.
		if libs, err = EnsureLibs(ctx); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout)
	defer cancel()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("lab: broker dir: %w", err)
	}
	formatted, fresh, err := storageState(cfg.LogDirs)
	if err != nil {
		return nil, err
	}
	var prev *state
	if formatted {
		st, err := readState(cfg.Dir)
		if err != nil {
			return nil, fmt.Errorf("lab: storage in %v is formatted but: %w", cfg.LogDirs, err)
		}
		if brokerAlive(st.PID) {
			return nil, fmt.Errorf("lab: broker in %s already running (pid %d)", cfg.Dir, st.PID)
		}
		prev = &st
	}
	for attempt := 1; ; attempt++ {
		b, err := startOnce(ctx, cfg, libs, prev)
		if err == nil {
			return b, nil
		}
		// A picked port can be taken by someone else before the JVM binds
		// it. Retry with new ports, but only when we own the storage (it
		// did not exist before this call): it must be re-formatted since
		// the controller endpoint is written into it.
		if attempt >= 3 || !fresh || cfg.Port != 0 || !isBindFailure(cfg.Dir) || ctx.Err() != nil {
			return nil, err
		}
		for _, d := range cfg.LogDirs {
			if rerr := os.RemoveAll(d); rerr != nil {
				return nil, errors.Join(err, fmt.Errorf("lab: reset %s: %w", d, rerr))
			}
		}
	}
}

// storageState reports whether all log dirs are formatted (meta.properties)
// and whether none of them existed (so StartBroker owns them).
func storageState(logDirs []string) (formatted, fresh bool, err error) {
	n, missing := 0, 0
	for _, d := range logDirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
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

func isBindFailure(dir string) bool {
	return strings.Contains(tailFile(filepath.Join(dir, OutFile), 200), "Address already in use")
}

func startOnce(ctx context.Context, cfg BrokerConfig, libs string, prev *state) (*Broker, error) {
	port, cport := cfg.Port, 0
	clusterID := ""
	if prev != nil {
		var err error
		if cport, err = portOf(prev.ControllerAddr); err != nil {
			return nil, err
		}
		// Keep the old client port when free, so clients can reconnect;
		// unlike the controller port it is not part of the storage.
		if p, err := portOf(prev.Addr); err == nil && port == 0 && checkPortFree(p) == nil {
			port = p
		}
		clusterID = prev.ClusterID
	}
	if cfg.Port != 0 {
		if err := checkPortFree(cfg.Port); err != nil {
			return nil, err
		}
	}
	if port == 0 || cport == 0 {
		ports, err := freePorts(2, port, cport)
		if err != nil {
			return nil, err
		}
		if port == 0 {
			port = ports[0]
		}
		if cport == 0 {
			cport = ports[1]
		}
	}

	requestLog := ""
	if cfg.RequestLog {
		requestLog = filepath.Join(cfg.Dir, RequestLogFile)
	}
	propsPath := filepath.Join(cfg.Dir, PropertiesFile)
	if err := os.WriteFile(propsPath, []byte(serverProperties(cfg, port, cport)), 0o644); err != nil {
		return nil, fmt.Errorf("lab: write server.properties: %w", err)
	}
	log4jPath := filepath.Join(cfg.Dir, Log4jFile)
	if err := os.WriteFile(log4jPath, []byte(log4jConfig(requestLog)), 0o644); err != nil {
		return nil, fmt.Errorf("lab: write log4j2 config: %w", err)
	}
	if prev == nil {
		var err error
		if clusterID, err = NewClusterID(); err != nil {
			return nil, err
		}
		if err := formatStorage(ctx, cfg.Dir, libs, clusterID, propsPath); err != nil {
			return nil, err
		}
	}

	b := &Broker{
		dir: cfg.Dir,
		st: state{
			Addr:           net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
			ControllerAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(cport)),
			ClusterID:      clusterID,
			LogDirs:        cfg.LogDirs,
			RequestLog:     requestLog,
			Libs:           libs,
		},
	}
	if err := b.spawn(cfg, log4jPath, propsPath); err != nil {
		return nil, err
	}
	if err := writeState(cfg.Dir, b.st); err != nil {
		_ = b.Stop()
		return nil, err
	}
	if err := waitReady(ctx, b.st.Addr, b.done); err != nil {
		select {
		case <-b.done:
			err = fmt.Errorf("%w (%v)", err, b.waitErr)
		default:
		}
		_ = b.Stop()
		return nil, fmt.Errorf("lab: broker on %s not ready: %w\n--- %s (tail) ---\n%s",
			b.st.Addr, err, b.OutPath(), tailFile(b.OutPath(), 30))
	}
	return b, nil
}

// formatStorage runs `kafka.tools.StorageTool format --standalone`, which
// Kafka 4.x requires before first start: it writes meta.properties and the
// KRaft bootstrap checkpoint (this node as the only controller voter).
func formatStorage(ctx context.Context, dir, libs, clusterID, propsPath string) error {
	cmd, err := JavaCommand(ctx, libs, ToolJVMArgs(), "kafka.tools.StorageTool",
		"format", "-t", clusterID, "-c", propsPath, "--standalone")
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
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("lab: format storage: %w\n%s", err, tailFile(outPath, 20))
	}
	return nil
}

func (b *Broker) spawn(cfg BrokerConfig, log4jPath, propsPath string) error {
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
	fmt.Fprintf(out, "=== kscope lab: starting broker %s at %s ===\n", b.st.Addr, time.Now().Format(time.RFC3339))
	cmd := exec.Command(java,
		"-Xmx"+strconv.Itoa(cfg.HeapMB)+"m",
		"-XX:+ExitOnOutOfMemoryError",
		"-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile="+log4jPath,
		"-cp", Classpath(b.st.Libs),
		brokerMainClass, propsPath)
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
	if !brokerAlive(st.PID) {
		return nil, fmt.Errorf("%w in %s", ErrNotRunning, abs)
	}
	return &Broker{st: st, dir: abs}, nil
}

// Addr is the PLAINTEXT bootstrap address, "127.0.0.1:PORT".
func (b *Broker) Addr() string { return b.st.Addr }

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
	return brokerAlive(b.st.PID)
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
	} else if brokerAlive(pid) {
		_ = syscall.Kill(pid, syscall.SIGTERM)
		if !waitGone(pid, stopGrace) {
			killed = true
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if !waitGone(pid, 5*time.Second) {
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
		return fmt.Errorf("lab: stop broker pid %d: killed after %v without exiting on SIGTERM", pid, stopGrace)
	}
	return nil
}
