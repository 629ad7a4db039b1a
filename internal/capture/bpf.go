package capture

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// Values the kernel exposes to classic BPF through ancillary loads.
const (
	pktTypeOutgoing = 4 // PACKET_OUTGOING (skb->pkt_type)

	arphrdEther    = 1     // ARPHRD_ETHER: Ethernet, veth, bridges, bonds
	arphrdLoopback = 772   // ARPHRD_LOOPBACK: lo (Ethernet framing, zero MACs)
	arphrdNone     = 65534 // ARPHRD_NONE: tun, wireguard (raw IP)
)

// framing is where the IP header starts in what an AF_PACKET SOCK_RAW
// socket delivers.
type framing int

const (
	framingEthernet framing = iota // 14-byte Ethernet header (lo and veth too)
	framingRawIP                   // the IP header itself (ARPHRD_NONE)
)

// filterSpec describes the socket filter to build.
type filterSpec struct {
	framing framing
	// ports: keep TCP segments with either port in the list; empty keeps
	// all TCP.
	ports []uint16
	// snapLen is the accept return value: the kernel keeps this many
	// bytes of a packet.
	snapLen uint32
	// dropOutgoing drops every PACKET_OUTGOING packet: for a socket bound
	// to a loopback interface, which sees each packet leave and arrive.
	dropOutgoing bool
	// loopbackIfindex, on a socket bound to all interfaces, drops
	// PACKET_OUTGOING packets on these interfaces (libpcap keeps only the
	// arriving copy of a loopback packet too).
	loopbackIfindex []int
	// ethernetOnly, on a socket bound to all interfaces, drops packets of
	// interfaces without Ethernet framing (tun, ...): one capture has one
	// link type.
	ethernetOnly bool
}

// Offsets in an Ethernet frame and in IP headers.
const (
	ethTypeOff = 12
	ethHdrLen  = 14

	ip4ProtoOff = 9
	ip4FragOff  = 6
	ip6NextOff  = 6
	ip6HdrLen   = 40

	etherTypeIPv4   = 0x0800
	etherTypeIPv6   = 0x86dd
	etherTypeVLAN   = 0x8100
	etherTypeQinQ   = 0x88a8
	ipProtoTCP      = 6
	ip4FragMask     = 0x1fff
	maxCondJumpSkip = 255
)

// IPv6 next-header values the filter cannot look past (extension headers):
// such packets are handed to user space, which decodes them properly.
var ip6ExtHeaders = []uint32{0, 43, 44, 50, 51, 60, 135, 139, 140, 253, 254}

// The labels of the filter's jump targets.
const (
	lAccept = "accept"
	lDrop   = "drop"
	lStart  = "start"
	lFrame  = "frame"
	lIP4    = "ip4"
	lIP6    = "ip6"
	lTCP6   = "tcp6"
)

// buildFilter returns the classic BPF program for spec: TCP over IPv4 or
// IPv6 with a port in spec.ports on either side, truncated to snapLen;
// anything the filter cannot judge (non-first IPv4 fragments, IPv6
// extension headers, VLAN tags the NIC did not strip) passes. The program
// is laid out in the order of its checks: the packet's interface, its
// network layer, then TCP and the ports over IPv4 and over IPv6.
func buildFilter(spec filterSpec) ([]bpf.Instruction, error) {
	var p prog
	p.interfaceChecks(spec)
	nh, err := p.networkLayer(spec.framing)
	if err != nil {
		return nil, err
	}
	p.tcp4(nh, spec.ports)
	p.tcp6(nh, spec.ports)
	p.label(lAccept)
	p.ins(bpf.RetConstant{Val: spec.snapLen})
	p.label(lDrop)
	p.ins(bpf.RetConstant{Val: 0})
	return p.resolve()
}

// interfaceChecks drops the leaving copy of loopback packets (on a
// loopback socket, or on the loopback interfaces of a socket on all of
// them) and, with ethernetOnly, packets of interfaces without Ethernet
// framing. It ends at lFrame.
func (p *prog) interfaceChecks(spec filterSpec) {
	switch {
	case spec.dropOutgoing:
		p.ins(bpf.LoadExtension{Num: bpf.ExtType})
		p.jeq(pktTypeOutgoing, lDrop, "")
	case len(spec.loopbackIfindex) > 0:
		p.ins(bpf.LoadExtension{Num: bpf.ExtType})
		p.jeq(pktTypeOutgoing, "", lStart)
		p.ins(bpf.LoadExtension{Num: bpf.ExtInterfaceIndex})
		for _, idx := range spec.loopbackIfindex {
			p.jeq(uint32(idx), lDrop, "")
		}
	}
	p.label(lStart)
	if spec.ethernetOnly {
		p.ins(bpf.LoadExtension{Num: bpf.ExtLinkLayerType})
		p.jeq(arphrdEther, lFrame, "")
		p.jeq(arphrdLoopback, lFrame, lDrop)
	}
	p.label(lFrame)
}

// networkLayer jumps to lIP4 or lIP6 by the packet's network protocol
// (VLAN-tagged frames pass, anything else is dropped) and returns the
// offset of the network header for the given framing.
func (p *prog) networkLayer(f framing) (nh uint32, err error) {
	switch f {
	case framingEthernet:
		p.ins(bpf.LoadAbsolute{Off: ethTypeOff, Size: 2})
		p.jeq(etherTypeIPv4, lIP4, "")
		p.jeq(etherTypeIPv6, lIP6, "")
		p.jeq(etherTypeVLAN, lAccept, "")
		p.jeq(etherTypeQinQ, lAccept, lDrop)
		return ethHdrLen, nil
	case framingRawIP:
		p.ins(bpf.LoadAbsolute{Off: 0, Size: 1})
		p.ins(bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4})
		p.jeq(4, lIP4, "")
		p.jeq(6, lIP6, lDrop)
		return 0, nil
	default:
		return 0, fmt.Errorf("capture: unknown framing %d", f)
	}
}

// tcp4 is the IPv4 part, at lIP4: TCP, then the ports behind a header of
// any length (IHL).
func (p *prog) tcp4(nh uint32, ports []uint16) {
	p.label(lIP4)
	p.ins(bpf.LoadAbsolute{Off: nh + ip4ProtoOff, Size: 1})
	p.jeq(ipProtoTCP, "", lDrop)
	p.ins(bpf.LoadAbsolute{Off: nh + ip4FragOff, Size: 2})
	p.jset(ip4FragMask, lAccept, "") // a later fragment: no TCP header to judge
	if len(ports) == 0 {
		p.ja(lAccept)
		return
	}
	p.ins(bpf.LoadMemShift{Off: nh})
	for _, off := range []uint32{0, 2} { // source, destination port
		p.ins(bpf.LoadIndirect{Off: nh + off, Size: 2})
		for _, port := range ports {
			p.jeq(uint32(port), lAccept, "")
		}
	}
	p.ja(lDrop)
}

// tcp6 is the IPv6 part, at lIP6: TCP right after the fixed header, then
// the ports; extension headers pass.
func (p *prog) tcp6(nh uint32, ports []uint16) {
	p.label(lIP6)
	p.ins(bpf.LoadAbsolute{Off: nh + ip6NextOff, Size: 1})
	p.jeq(ipProtoTCP, lTCP6, "")
	for i, h := range ip6ExtHeaders {
		next := ""
		if i == len(ip6ExtHeaders)-1 {
			next = lDrop
		}
		p.jeq(h, lAccept, next)
	}
	p.label(lTCP6)
	if len(ports) == 0 {
		return
	}
	for _, off := range []uint32{0, 2} {
		p.ins(bpf.LoadAbsolute{Off: nh + ip6HdrLen + off, Size: 2})
		for _, port := range ports {
			p.jeq(uint32(port), lAccept, "")
		}
	}
	p.ja(lDrop)
}

// prog is a tiny assembler with labels for jump targets.
type prog struct {
	items  []item
	labels map[string]int // label → index in items
}

type item struct {
	ins      bpf.Instruction // nil for jumps, filled by resolve
	cond     bpf.JumpTest
	val      uint32
	jt, jf   string // labels; "" is the next instruction
	ja       string // unconditional jump target
	isJump   bool
	isUncond bool
}

func (p *prog) ins(i bpf.Instruction) { p.items = append(p.items, item{ins: i}) }

func (p *prog) label(name string) {
	if p.labels == nil {
		p.labels = map[string]int{}
	}
	p.labels[name] = len(p.items)
}

func (p *prog) jeq(val uint32, jt, jf string) {
	p.items = append(p.items, item{isJump: true, cond: bpf.JumpEqual, val: val, jt: jt, jf: jf})
}

func (p *prog) jset(val uint32, jt, jf string) {
	p.items = append(p.items, item{isJump: true, cond: bpf.JumpBitsSet, val: val, jt: jt, jf: jf})
}

func (p *prog) ja(target string) {
	p.items = append(p.items, item{isJump: true, isUncond: true, ja: target})
}

// resolve turns labels into skips; a conditional jump can skip at most 255
// instructions.
func (p *prog) resolve() ([]bpf.Instruction, error) {
	out := make([]bpf.Instruction, len(p.items))
	skip := func(from int, label string) (uint32, error) {
		if label == "" {
			return 0, nil
		}
		to, ok := p.labels[label]
		if !ok {
			return 0, fmt.Errorf("capture: filter label %q undefined", label)
		}
		if to <= from {
			return 0, fmt.Errorf("capture: filter jump backwards to %q", label)
		}
		return uint32(to - from - 1), nil
	}
	for i, it := range p.items {
		if !it.isJump {
			out[i] = it.ins
			continue
		}
		if it.isUncond {
			s, err := skip(i, it.ja)
			if err != nil {
				return nil, err
			}
			out[i] = bpf.Jump{Skip: s}
			continue
		}
		st, err := skip(i, it.jt)
		if err != nil {
			return nil, err
		}
		sf, err := skip(i, it.jf)
		if err != nil {
			return nil, err
		}
		if st > maxCondJumpSkip || sf > maxCondJumpSkip {
			return nil, errFilterTooLong
		}
		out[i] = bpf.JumpIf{Cond: it.cond, Val: it.val, SkipTrue: uint8(st), SkipFalse: uint8(sf)}
	}
	return out, nil
}

var errFilterTooLong = fmt.Errorf("capture: socket filter jumps too far (too many ports)")

// socketFilter builds and assembles the filter for spec. With too many
// ports for classic BPF's 8-bit conditional jumps, the kernel keeps all
// TCP and the decoder filters the ports.
func socketFilter(spec filterSpec) ([]bpf.RawInstruction, error) {
	ins, err := buildFilter(spec)
	if err == errFilterTooLong {
		spec.ports = nil
		ins, err = buildFilter(spec)
	}
	if err != nil {
		return nil, err
	}
	return bpf.Assemble(ins)
}
