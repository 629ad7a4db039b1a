package capture

import (
	"cmp"
	"errors"
	"fmt"
	"net"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/afpacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Live capture defaults.
const (
	// DefaultSnapLen is the bytes kept of each packet (tcpdump's default):
	// a loopback GSO segment is up to 64 KiB.
	DefaultSnapLen = 262144
	// DefaultLiveBufferBytes is the size of the ring the kernel writes
	// packets into. A consumer's fetch burst of 64 KiB loopback segments
	// overflows a few MiB.
	DefaultLiveBufferBytes = 64 << 20

	// LivePollTimeout is the longest Next waits for a packet before it
	// returns ErrTimeout, so callers can stop; with a block timeout of
	// more than two thirds of it, Next waits one and a half block
	// timeouts instead (Live.pollTimeout).
	LivePollTimeout = 150 * time.Millisecond
	// DefaultBlockTimeout is how long the kernel keeps a partly filled
	// ring block before handing it over: the most a packet waits for user
	// space (its timestamp is the kernel's, unaffected).
	DefaultBlockTimeout = 10 * time.Millisecond
	liveFrameSize       = 4096
	liveMinBlock        = 1 << 20
)

// ErrTimeout is returned by (*Live).Next when no packet arrived within
// its poll timeout (LivePollTimeout, or one and a half block timeouts if
// that is longer). It is not a failure: call Next again, or stop.
var ErrTimeout = errors.New("capture: no packet within the poll timeout")

// LiveConfig configures OpenLive.
type LiveConfig struct {
	// Interface is the interface to capture on; "any" or "" captures on
	// every interface with Ethernet framing (Ethernet, veth, bridges,
	// loopback).
	Interface string
	// Ports: the kernel keeps only TCP segments with one of these ports on
	// either side; empty keeps all TCP.
	Ports []uint16
	// SnapLen is the bytes kept of each packet; 0 is DefaultSnapLen, at
	// most MaxPacketBytes.
	SnapLen int
	// BufferBytes is the size of the kernel ring; 0 is
	// DefaultLiveBufferBytes. It is taken in whole blocks of 1 MiB (more
	// for a snap length near 1 MiB), at least two.
	BufferBytes int
	// BlockTimeout is how long a partly filled block waits for more
	// packets before the reader gets it; 0 is DefaultBlockTimeout. Each
	// block handed over wakes the reader: a long-running capture that
	// needs no answer within milliseconds (the agent) saves most of its
	// CPU with a longer one, as long as the ring holds that long's
	// packets.
	BlockTimeout time.Duration
	// BlockBytes is the size of a ring block, rounded up to a power of
	// two that holds a packet of the snap length; 0 is 1 MiB. Each block
	// handed over is a wake-up of the reader: a consumer at high packet
	// rates that needs no answer within milliseconds (the agent) wakes
	// less often with larger ones.
	BlockBytes int
	// OnWait, when set, is called in Next's goroutine when Next has
	// returned every packet of the blocks handed over and is about to
	// wait for the next one (not again until it has returned a packet):
	// work due about as often is done at the end of the process's
	// wake-up (the agent reads its tracer's rings then) rather than in
	// one of its own. At the end, not the start: Go's monitor thread
	// (sysmon), asleep while the process is idle, is woken by the first
	// system call after that and then polls every 20 µs for as long as
	// the process stays busy; a wake-up whose system calls all come after
	// its work (Next's own wait makes none) does not set it polling for
	// the whole block.
	OnWait func()
}

// LiveStats are a live capture's counters.
type LiveStats struct {
	// Read is the packets Next returned.
	Read int64
	// Kernel is the packets the socket filter accepted (tp_packets),
	// dropped ones included.
	Kernel int64
	// Drops is the packets lost because the ring was full (tp_drops):
	// user space did not keep up.
	Drops int64
	// QueueFreezes counts the times the ring filled up (tp_freeze_q_cnt).
	QueueFreezes int64
}

// Live reads packets from a network interface through an AF_PACKET socket
// with a TPACKET_V3 ring (no libpcap). A socket filter in the kernel keeps
// only TCP on the configured ports and drops the second copy of every
// loopback packet. Next is for one goroutine; Stats may be called from
// another; Close must not run concurrently with Next.
type Live struct {
	tp *afpacket.TPacket
	// wait is the socket, duplicated into Go's network poller: Next
	// parks on it between blocks instead of blocking a thread in poll.
	// Nil if afpacket's socket could not be reached (then afpacket polls).
	wait  *os.File
	waitc syscall.RawConn
	name  string
	link  layers.LinkType
	read  atomic.Int64
	// onWait is LiveConfig.OnWait; readSinceWait is the packet count
	// when it was last called.
	onWait        func()
	readSinceWait int64
	// pollTimeout is how long Next waits for a block: longer than the
	// block timeout, so that under traffic a wait ends with a block
	// handed over, not with a timeout that wakes the process between two
	// blocks.
	pollTimeout time.Duration
	mu          sync.Mutex // guards final and tp after Close
	final       *LiveStats // set by Close
}

// OpenLive opens a live capture. It needs CAP_NET_RAW (root).
//
// Supported interfaces: those with Ethernet framing (ARPHRD_ETHER:
// Ethernet, veth, bridges, bonds; ARPHRD_LOOPBACK: lo), whose packets are
// returned as layers.LinkTypeEthernet, and, named explicitly, raw-IP
// interfaces (ARPHRD_NONE: tun, wireguard) as layers.LinkTypeRaw. "any"
// captures the Ethernet-framed interfaces only, so that one capture has one
// link type. VLAN tags stripped by the NIC are not put back, and the
// interface is not put in promiscuous mode (a broker's own traffic does not
// need it).
func OpenLive(cfg LiveConfig) (*Live, error) {
	snap := cfg.SnapLen
	if snap <= 0 {
		snap = DefaultSnapLen
	}
	snap = min(snap, MaxPacketBytes)
	bufBytes := cfg.BufferBytes
	if bufBytes <= 0 {
		bufBytes = DefaultLiveBufferBytes
	}

	spec := filterSpec{ports: cfg.Ports, snapLen: uint32(snap)}
	blockTimeout := cmp.Or(cfg.BlockTimeout, DefaultBlockTimeout)
	l := &Live{name: cfg.Interface, onWait: cfg.OnWait, pollTimeout: max(LivePollTimeout, blockTimeout*3/2)}
	ifindex, err := l.chooseInterface(cfg.Interface, &spec)
	if err != nil {
		return nil, err
	}
	filter, err := socketFilter(spec)
	if err != nil {
		return nil, err
	}
	block, blocks := ringBlocks(snap, bufBytes, cfg.BlockBytes)
	tp, err := l.openRing(ifaceOpt(cfg.Interface), block, blocks, blockTimeout)
	if err != nil {
		return nil, err
	}
	if err := l.attachFilter(tp, filter, spec.dropOutgoing, ifindex); err != nil {
		tp.Close()
		return nil, err
	}
	l.tp = tp
	if tpacketHasFD {
		if err := l.openWait(); err != nil {
			tp.Close()
			return nil, fmt.Errorf("capture: AF_PACKET socket on %s: %w", l.name, err)
		}
	}
	return l, nil
}

// chooseInterface resolves the interface to capture on ("" or "any":
// every Ethernet-framed one) and sets the link type of l and the framing
// the filter expects, with the loopback interfaces whose duplicates it
// drops. It returns the interface's index, 0 for any.
func (l *Live) chooseInterface(name string, spec *filterSpec) (ifindex int, err error) {
	if name == "" || name == "any" {
		l.name = "any"
		l.link = layers.LinkTypeEthernet
		spec.framing, spec.ethernetOnly = framingEthernet, true
		ifs, err := net.Interfaces()
		if err != nil {
			return 0, fmt.Errorf("capture: list interfaces: %w", err)
		}
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagLoopback != 0 {
				spec.loopbackIfindex = append(spec.loopbackIfindex, ifc.Index)
			}
		}
		return 0, nil
	}
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return 0, fmt.Errorf("capture: interface %q: %w", name, err)
	}
	hatype, err := interfaceType(ifc.Name)
	if err != nil {
		return 0, fmt.Errorf("capture: interface %s: %w", ifc.Name, err)
	}
	switch hatype {
	case arphrdEther, arphrdLoopback:
		l.link, spec.framing = layers.LinkTypeEthernet, framingEthernet
	case arphrdNone:
		l.link, spec.framing = layers.LinkTypeRaw, framingRawIP
	default:
		return 0, fmt.Errorf("capture: interface %s: link type ARPHRD %d is not supported (Ethernet, loopback and raw-IP interfaces are)", ifc.Name, hatype)
	}
	spec.dropOutgoing = hatype == arphrdLoopback || ifc.Flags&net.FlagLoopback != 0
	return ifc.Index, nil
}

// ringBlocks sizes the kernel ring: blocks that each hold a whole packet
// of snap bytes (and are at least blockBytes), as many as fit in
// bufBytes, at least two.
func ringBlocks(snap, bufBytes, blockBytes int) (block, blocks int) {
	block = liveMinBlock
	for block < snap+4096 || block < blockBytes {
		block *= 2
	}
	return block, max(bufBytes/block, 2)
}

// openRing opens the AF_PACKET socket with its TPACKET_V3 ring. Where
// afpacket's socket can be reached (tpacketHasFD), it is bound to
// protocol 0, so it receives nothing until attachFilter binds it, and
// Next waits in Go's poller rather than afpacket's poll.
func (l *Live) openRing(iface string, block, blocks int, blockTimeout time.Duration) (*afpacket.TPacket, error) {
	proto := afpacket.OptProtocol(unix.ETH_P_ALL)
	pollTimeout := l.pollTimeout
	if tpacketHasFD {
		proto = 0
		pollTimeout = 0 // afpacket only checks; Next waits in the poller
	}
	tp, err := afpacket.NewTPacket(
		afpacket.OptInterface(iface),
		proto,
		afpacket.TPacketVersion3,
		afpacket.OptFrameSize(liveFrameSize),
		afpacket.OptBlockSize(block),
		afpacket.OptNumBlocks(blocks),
		afpacket.OptBlockTimeout(blockTimeout),
		afpacket.OptPollTimeout(pollTimeout),
	)
	if err != nil {
		return nil, fmt.Errorf("capture: AF_PACKET socket on %s (%d blocks of %d bytes): %w", l.name, blocks, block, err)
	}
	return tp, nil
}

// attachFilter attaches the socket filter to tp and only then, where the
// socket can be reached, binds it to every protocol on ifindex: no
// unfiltered packet (or loopback duplicate) reaches the ring first.
func (l *Live) attachFilter(tp *afpacket.TPacket, filter []bpf.RawInstruction, dropOutgoing bool, ifindex int) error {
	if err := tp.SetBPF(filter); err != nil {
		return fmt.Errorf("capture: attach socket filter on %s: %w", l.name, err)
	}
	if !tpacketHasFD {
		return nil
	}
	if dropOutgoing {
		// The filter drops the leaving copy of each loopback packet,
		// but only after the kernel cloned the packet for this socket
		// and ran the filter, in the sender's context, for every
		// packet on the interface: on lo at the broker's maximum,
		// 1.5-2% of a core taken from the broker and its clients
		// (perf, bench/agent-results.md). Ignoring outgoing packets
		// (Linux 4.20) skips both. Older kernels refuse the option;
		// the filter's check stays for them.
		_ = unix.SetsockoptInt(tpacketFD(tp), unix.SOL_PACKET, unix.PACKET_IGNORE_OUTGOING, 1)
	}
	sa := &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifindex}
	if err := unix.Bind(tpacketFD(tp), sa); err != nil {
		return fmt.Errorf("capture: bind AF_PACKET socket to %s: %w", l.name, err)
	}
	return nil
}

// openWait registers a duplicate of the socket with Go's network poller.
// A goroutine blocked in poll(2) holds a thread in a system call: after
// 10 ms the runtime's monitor hands its processor to another thread and
// wakes up every 20 µs for a while after each such hand-off, which cost
// the agent more than a tenth of its CPU. Parked in the poller, the
// goroutine costs nothing until the kernel retires a block.
func (l *Live) openWait() error {
	fd, err := unix.Dup(tpacketFD(l.tp))
	if err != nil {
		return fmt.Errorf("dup: %w", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return fmt.Errorf("set non-blocking: %w", err)
	}
	f := os.NewFile(uintptr(fd), "afpacket")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return fmt.Errorf("poller: %w", err)
	}
	// A file the poller cannot take has no deadlines.
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		f.Close()
		return fmt.Errorf("poller: %w", err)
	}
	l.wait, l.waitc = f, rc
	return nil
}

// readable reports whether the ring holds a block handed to user space
// that Next has not read: the socket polls readable while the block
// before the one the kernel fills is still the reader's. It is called
// when Next wakes, first thing: its poll, which never blocks (timeout
// 0), is a raw system call, so that it does not wake Go's sysmon for the
// rest of the wake-up (see LiveConfig.OnWait).
func readable(fd uintptr) bool {
	pfd := [1]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	var ts unix.Timespec
	n, _, errno := unix.RawSyscall6(unix.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd[0])), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
	return errno != 0 || n > 0 // an error: let afpacket's read report it
}

func ifaceOpt(name string) string {
	if name == "any" {
		return ""
	}
	return name
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

// interfaceType reads an interface's ARPHRD type from sysfs.
func interfaceType(name string) (int, error) {
	b, err := os.ReadFile("/sys/class/net/" + name + "/type")
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// afpacket keeps the socket in an unexported field; reading it lets
// OpenLive bind the socket after the filter is attached. The field's
// presence is checked once, so a gopacket that renamed it only loses that
// refinement.
var tpacketHasFD = func() bool {
	f, ok := reflect.TypeFor[afpacket.TPacket]().FieldByName("fd")
	return ok && f.Type.Kind() == reflect.Int
}()

func tpacketFD(tp *afpacket.TPacket) int {
	return int(reflect.ValueOf(tp).Elem().FieldByName("fd").Int())
}

// Interface returns the interface name ("any" for all).
func (l *Live) Interface() string { return l.name }

// LinkType returns the link type of every packet Next returns.
func (l *Live) LinkType() layers.LinkType { return l.link }

// Next returns the next packet, in the same shape as (*File).Next. The
// bytes point into the kernel ring and are valid until the next call. The
// timestamp is the kernel's (CLOCK_REALTIME, nanoseconds). It returns
// ErrTimeout when no packet arrived within the poll timeout (ErrTimeout).
func (l *Live) Next() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	data, ci, err := l.tp.ZeroCopyReadPacketData()
	if l.wait != nil && errors.Is(err, afpacket.ErrTimeout) {
		if read := l.read.Load(); l.onWait != nil && read != l.readSinceWait {
			l.readSinceWait = read
			l.onWait()
		}
		// The poller is edge-triggered and a retirement since the last
		// wait is forgotten when the wait starts: readable checks the
		// ring after that, so a block retired in between is not missed.
		_ = l.wait.SetReadDeadline(time.Now().Add(l.pollTimeout))
		if werr := l.waitc.Read(readable); werr == nil {
			data, ci, err = l.tp.ZeroCopyReadPacketData()
		}
	}
	if err != nil {
		if errors.Is(err, afpacket.ErrTimeout) {
			return nil, ci, 0, ErrTimeout
		}
		return nil, ci, 0, fmt.Errorf("capture on %s: %w", l.name, err)
	}
	l.read.Add(1)
	return data, ci, l.link, nil
}

// Stats returns the counters so far (the final ones after Close).
func (l *Live) Stats() (LiveStats, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return *l.final, nil
	}
	return l.stats()
}

func (l *Live) stats() (LiveStats, error) {
	s := LiveStats{Read: l.read.Load()}
	_, v3, err := l.tp.SocketStats()
	if err != nil {
		return s, fmt.Errorf("capture on %s: socket statistics: %w", l.name, err)
	}
	s.Kernel, s.Drops, s.QueueFreezes = int64(v3.Packets()), int64(v3.Drops()), int64(v3.QueueFreezes())
	return s, nil
}

// Close closes the socket and its ring. It must not run concurrently with
// Next.
func (l *Live) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.final != nil {
		return nil
	}
	s, err := l.stats()
	l.final = &s
	if l.wait != nil {
		l.wait.Close()
	}
	l.tp.Close()
	return err
}
