package iotrace

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/kscope-dev/kscope/internal/event"
)

// MaxPorts is how many local ports Config.Ports may hold
// (SOCK_MAX_PORTS in bpf/iosock.h).
const MaxPorts = 16

// ErrNoListenPorts: Config.Conns without Config.Ports, and the broker
// listens on no TCP port (yet: Follow tries again while it starts).
var ErrNoListenPorts = errors.New("iotrace: connections: the broker listens on no TCP port")

// conns is bpf/iosock.bpf.c loaded and attached: which broker thread
// receives on each client connection (Config.Conns).
type conns struct {
	objs iosockObjects
	attachment
	ports []uint16
	// events counts the connections reported (Stats.ConnEvents).
	events atomic.Uint64
}

// openConnSource is the connections' entry of sources.
func openConnSource(t *Tracer, cfg *Config, _ []uint32) (subtracer, error) {
	c, err := openConns(cfg.PID, cfg.Ports, cfg.ringFlags())
	if err != nil {
		return nil, err
	}
	t.mode.Conns = c.ports
	return c, nil
}

func openConns(pid int, ports []uint16, ringFlags uint64) (_ *conns, err error) {
	if len(ports) == 0 {
		if ports, err = ListenPorts(pid); err != nil {
			return nil, err
		}
	}
	var set [MaxPorts]uint16
	for _, p := range ports {
		if p == 0 {
			return nil, errors.New("iotrace: connections: port 0")
		}
		if slices.Contains(set[:], p) {
			continue
		}
		i := slices.Index(set[:], 0)
		if i < 0 {
			return nil, fmt.Errorf("iotrace: connections: more than %d ports", MaxPorts)
		}
		set[i] = p
	}
	spec, err := loadIosock()
	if err != nil {
		return nil, fmt.Errorf("iotrace: connections: %w", err)
	}
	if err := setRingFlags(spec, ringFlags); err != nil {
		return nil, fmt.Errorf("iotrace: connections: %w", err)
	}
	if err := spec.Variables[iosockVarTargTgid].Set(uint32(pid)); err != nil {
		return nil, fmt.Errorf("iotrace: connections: set pid: %w", err)
	}
	if err := spec.Variables[iosockVarKafkaPorts].Set(set); err != nil {
		return nil, fmt.Errorf("iotrace: connections: set ports: %w", err)
	}
	c := &conns{ports: slices.DeleteFunc(slices.Clone(set[:]), func(p uint16) bool { return p == 0 })}
	if err := loadObjects(spec, &c.objs, "iotrace: connections"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	if err = c.add(link.AttachTracing(link.TracingOptions{Program: c.objs.KsioSockRecv})); err != nil {
		return nil, fmt.Errorf("iotrace: connections: attach to BTF tracepoint sock_recv_length: %w", err)
	}
	if c.rd, err = ringbuf.NewReader(c.objs.KsioKevents); err != nil {
		return nil, fmt.Errorf("iotrace: connections ring buffer reader: %w", err)
	}
	return c, nil
}

// ListenPorts returns the TCP ports process pid listens on (IPv4 and
// IPv6), sorted: its open sockets (/proc/PID/fd) in the LISTEN state in
// its network namespace's /proc/PID/net/tcp and tcp6. For a broker, its
// listeners (and a JMX port, if any).
func ListenPorts(pid int) ([]uint16, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return nil, &PIDError{PID: pid, Err: err}
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if ino, ok := strings.CutPrefix(target, "socket:["); ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	var ports []uint16
	for _, table := range []string{"tcp", "tcp6"} {
		f, err := os.Open(filepath.Join(dir, "net", table))
		if errors.Is(err, os.ErrNotExist) {
			continue // no IPv6
		}
		if err != nil {
			return nil, fmt.Errorf("iotrace: connections: %w", err)
		}
		ports = append(ports, listening(bufio.NewScanner(f), inodes)...)
		f.Close()
	}
	if len(ports) == 0 {
		return nil, fmt.Errorf("%w (pid %d)", ErrNoListenPorts, pid)
	}
	slices.Sort(ports)
	return slices.Compact(ports), nil
}

// listening returns the local ports of a /proc/net/tcp table's sockets in
// state LISTEN (0A) whose inodes are in inodes.
func listening(sc *bufio.Scanner, inodes map[string]bool) []uint16 {
	var ports []uint16
	for sc.Scan() {
		// sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
		f := strings.Fields(sc.Text())
		if len(f) < 10 || f[3] != "0A" || !inodes[f[9]] {
			continue
		}
		_, port, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		if p, err := strconv.ParseUint(port, 16, 16); err == nil && p != 0 {
			ports = append(ports, uint16(p))
		}
	}
	return ports
}

func (c *conns) programs() []*ebpf.Program { return []*ebpf.Program{c.objs.KsioSockRecv} }

func (c *conns) counters(s *Stats) error {
	s.ConnEvents += c.events.Load()
	return sumCounters(c.objs.KsioKcounters, &s.ConnRingbufDrops, &s.ConnRecvs)
}

func (c *conns) close() error { return c.closeWith(&c.objs) }

// sockEventSize is sizeof(struct iosock_event).
const sockEventSize = 64

// decodeSockEvent decodes struct iosock_event (little-endian).
func decodeSockEvent(b []byte) (iosockIosockEvent, error) {
	var ev iosockIosockEvent
	if len(b) < sockEventSize {
		return ev, fmt.Errorf("iotrace: connections ring buffer sample of %d bytes, want %d", len(b), sockEventSize)
	}
	le := binary.LittleEndian
	ev.TsNs = le.Uint64(b[0:])
	ev.Cookie = le.Uint64(b[8:])
	ev.Tid = le.Uint32(b[16:])
	ev.Family = le.Uint16(b[20:])
	ev.Lport = le.Uint16(b[22:])
	ev.Rport = le.Uint16(b[24:])
	copy(ev.Laddr[:], b[32:48])
	copy(ev.Raddr[:], b[48:64])
	return ev, nil
}

const (
	afInet  = 2
	afInet6 = 10
)

// sockAddr formats a socket's address and port as the wire decoder
// formats Request.Client and Request.Broker (net.JoinHostPort of the IP):
// "127.0.0.1:9092", "[::1]:9092"; an IPv4-mapped IPv6 address, as a Java
// broker's dual-stack sockets have for IPv4 peers, as IPv4, which is what
// its packets carry.
func sockAddr(family uint16, addr [16]byte, port uint16) (string, error) {
	var ip netip.Addr
	switch family {
	case afInet:
		ip = netip.AddrFrom4([4]byte(addr[:4]))
	case afInet6:
		ip = netip.AddrFrom16(addr).Unmap()
	default:
		return "", fmt.Errorf("iotrace: connections: address family %d", family)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(int(port))), nil
}

// connThread converts a decoded event; thread names the broker's threads.
func connThread(ev *iosockIosockEvent, clock clockOffset, thread func(int) string) (*event.ConnThread, error) {
	client, err := sockAddr(ev.Family, ev.Raddr, ev.Rport)
	if err != nil {
		return nil, err
	}
	broker, err := sockAddr(ev.Family, ev.Laddr, ev.Lport)
	if err != nil {
		return nil, err
	}
	return &event.ConnThread{Kind: event.KindConnThread, Time: clock.wall(ev.TsNs), TID: int(ev.Tid),
		Thread: thread(int(ev.Tid)), Client: client, Broker: broker}, nil
}

func (c *conns) read(t *Tracer, h Handlers, deliver *delivery) error {
	return t.readPolled(c.rd, func(b []byte) error {
		ev, err := decodeSockEvent(b)
		if err != nil {
			return err
		}
		c.events.Add(1)
		ct, err := connThread(&ev, t.clock, t.threads.name)
		if err != nil || h.ConnThread == nil {
			return nil // the kernel sends AF_INET and AF_INET6 only
		}
		return deliver.do(func() error { return h.ConnThread(ct) })
	})
}
