package capture

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"golang.org/x/net/bpf"
)

// frame builds a packet: Ethernet (unless raw) + IPv4/IPv6 + TCP/UDP.
type frameSpec struct {
	ip6      bool
	udp      bool
	src, dst uint16
	raw      bool // no Ethernet header
	vlan     bool
	ip4Opts  bool   // an IPv4 header with options (IHL 6)
	fragOff  uint16 // IPv4 fragment offset (8-byte units)
	hopByHop bool   // an IPv6 hop-by-hop extension header before TCP
	payload  int
}

func buildFrame(t *testing.T, f frameSpec) []byte {
	t.Helper()
	var ls []gopacket.SerializableLayer
	etherType := layers.EthernetTypeIPv4
	if f.ip6 {
		etherType = layers.EthernetTypeIPv6
	}
	if !f.raw {
		eth := &layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0, 0, 0, 0, 0, 2}, EthernetType: etherType}
		if f.vlan {
			eth.EthernetType = layers.EthernetTypeDot1Q
			ls = append(ls, eth, &layers.Dot1Q{VLANIdentifier: 7, Type: etherType})
		} else {
			ls = append(ls, eth)
		}
	}
	proto := layers.IPProtocolTCP
	if f.udp {
		proto = layers.IPProtocolUDP
	}
	var nl gopacket.NetworkLayer
	if f.ip6 {
		ip := &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
		nl = ip
		ls = append(ls, ip)
		if f.hopByHop {
			ip.NextHeader = layers.IPProtocolIPv6HopByHop
			ip.HopByHop = &layers.IPv6HopByHop{}
			ip.HopByHop.NextHeader = proto
			ip.HopByHop.Options = []*layers.IPv6HopByHopOption{{OptionType: 1, OptionData: []byte{0, 0, 0, 0}}}
		}
	} else {
		ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: proto, SrcIP: net.IP{10, 0, 0, 1}, DstIP: net.IP{10, 0, 0, 2},
			FragOffset: f.fragOff}
		if f.ip4Opts {
			ip.Options = []layers.IPv4Option{{OptionType: 1}, {OptionType: 1}, {OptionType: 1}, {OptionType: 0}}
		}
		nl = ip
		ls = append(ls, ip)
	}
	if f.udp {
		u := &layers.UDP{SrcPort: layers.UDPPort(f.src), DstPort: layers.UDPPort(f.dst)}
		u.SetNetworkLayerForChecksum(nl)
		ls = append(ls, u)
	} else {
		tc := &layers.TCP{SrcPort: layers.TCPPort(f.src), DstPort: layers.TCPPort(f.dst), Seq: 1, ACK: true, Window: 1000}
		tc.SetNetworkLayerForChecksum(nl)
		ls = append(ls, tc)
	}
	ls = append(ls, gopacket.Payload(make([]byte, f.payload)))
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func runFilter(t *testing.T, ins []bpf.Instruction, pkt []byte) int {
	t.Helper()
	vm, err := bpf.NewVM(ins)
	if err != nil {
		t.Fatalf("NewVM: %v", err)
	}
	n, err := vm.Run(pkt)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return n
}

func TestBPFFilterFrames(t *testing.T) {
	const snap = 1000
	ports := []uint16{9092, 9093}
	type tc struct {
		name   string
		frame  frameSpec
		ports  []uint16
		keep   bool
		framed framing
	}
	cases := []tc{
		{name: "ipv4 tcp to broker", frame: frameSpec{src: 40000, dst: 9092}, keep: true},
		{name: "ipv4 tcp from broker", frame: frameSpec{src: 9092, dst: 40000}, keep: true},
		{name: "ipv4 tcp second port", frame: frameSpec{src: 40000, dst: 9093}, keep: true},
		{name: "ipv4 tcp other port", frame: frameSpec{src: 40000, dst: 9094}},
		{name: "ipv4 tcp port only in payload position", frame: frameSpec{src: 22, dst: 40000, payload: 100}},
		{name: "ipv4 options, broker port", frame: frameSpec{src: 40000, dst: 9092, ip4Opts: true}, keep: true},
		{name: "ipv4 options, other port", frame: frameSpec{src: 40000, dst: 80, ip4Opts: true}},
		{name: "ipv4 udp broker port", frame: frameSpec{udp: true, src: 40000, dst: 9092}},
		{name: "ipv4 later fragment passes", frame: frameSpec{src: 1, dst: 2, fragOff: 100}, keep: true},
		{name: "ipv6 tcp to broker", frame: frameSpec{ip6: true, src: 40000, dst: 9092}, keep: true},
		{name: "ipv6 tcp from broker", frame: frameSpec{ip6: true, src: 9093, dst: 40000}, keep: true},
		{name: "ipv6 tcp other port", frame: frameSpec{ip6: true, src: 40000, dst: 443}},
		{name: "ipv6 udp broker port", frame: frameSpec{ip6: true, udp: true, src: 9092, dst: 40000}},
		{name: "ipv6 extension header passes", frame: frameSpec{ip6: true, hopByHop: true, src: 1, dst: 2}, keep: true},
		{name: "vlan tag passes", frame: frameSpec{vlan: true, src: 1, dst: 2}, keep: true},
		{name: "no ports: any tcp", frame: frameSpec{src: 1, dst: 2}, ports: []uint16{}, keep: true},
		{name: "no ports: ipv6 tcp", frame: frameSpec{ip6: true, src: 1, dst: 2}, ports: []uint16{}, keep: true},
		{name: "no ports: udp", frame: frameSpec{udp: true, src: 1, dst: 2}, ports: []uint16{}},
		{name: "raw ipv4 to broker", frame: frameSpec{raw: true, src: 40000, dst: 9092}, framed: framingRawIP, keep: true},
		{name: "raw ipv4 options from broker", frame: frameSpec{raw: true, ip4Opts: true, src: 9092, dst: 1}, framed: framingRawIP, keep: true},
		{name: "raw ipv4 other port", frame: frameSpec{raw: true, src: 40000, dst: 9}, framed: framingRawIP},
		{name: "raw ipv6 to broker", frame: frameSpec{raw: true, ip6: true, src: 40000, dst: 9093}, framed: framingRawIP, keep: true},
		{name: "raw ipv6 udp", frame: frameSpec{raw: true, ip6: true, udp: true, src: 40000, dst: 9093}, framed: framingRawIP},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := ports
			if c.ports != nil {
				p = c.ports
			}
			ins, err := buildFilter(filterSpec{framing: c.framed, ports: p, snapLen: snap})
			if err != nil {
				t.Fatal(err)
			}
			pkt := buildFrame(t, c.frame)
			got := runFilter(t, ins, pkt)
			want := 0
			if c.keep {
				want = snap // the VM returns the verdict; the kernel caps it at the packet's length
			}
			if got != want {
				t.Errorf("filter kept %d bytes of %d, want %d", got, len(pkt), want)
			}
		})
	}
	t.Run("not IP", func(t *testing.T) {
		ins, _ := buildFilter(filterSpec{ports: ports, snapLen: snap})
		arp := buildARP(t)
		if got := runFilter(t, ins, arp); got != 0 {
			t.Errorf("ARP kept (%d bytes)", got)
		}
		if got := runFilter(t, ins, []byte{1, 2, 3}); got != 0 {
			t.Errorf("a 3-byte frame kept (%d bytes)", got)
		}
		// IPv4 TCP cut before the ports: the load fails, the packet goes.
		pkt := buildFrame(t, frameSpec{src: 40000, dst: 9092})
		if got := runFilter(t, ins, pkt[:14+20+1]); got != 0 {
			t.Errorf("a frame cut before the ports kept (%d bytes)", got)
		}
	})
	t.Run("snap length", func(t *testing.T) {
		ins, _ := buildFilter(filterSpec{ports: ports, snapLen: 100})
		pkt := buildFrame(t, frameSpec{src: 40000, dst: 9092, payload: 5000})
		if got := runFilter(t, ins, pkt); got != 100 {
			t.Errorf("kept %d bytes, want the snap length 100", got)
		}
	})
}

func buildARP(t *testing.T) []byte {
	buf := gopacket.NewSerializeBuffer()
	err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true},
		&layers.Ethernet{SrcMAC: net.HardwareAddr{0, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, EthernetType: layers.EthernetTypeARP},
		&layers.ARP{AddrType: layers.LinkTypeEthernet, Protocol: layers.EthernetTypeIPv4, HwAddressSize: 6, ProtAddressSize: 4,
			Operation: 1, SourceHwAddress: []byte{0, 0, 0, 0, 0, 1}, SourceProtAddress: []byte{10, 0, 0, 1},
			DstHwAddress: make([]byte, 6), DstProtAddress: []byte{10, 0, 0, 2}})
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// The ancillary loads (packet type, interface index, ARPHRD type) are not
// implemented by bpf.VM. emulate rewrites them into loads from a 12-byte
// prefix put before the frame, and shifts every packet offset by it, so
// the whole program runs in the VM.
const emuPrefix = 12

func emulate(t *testing.T, ins []bpf.Instruction) []bpf.Instruction {
	t.Helper()
	out := make([]bpf.Instruction, len(ins))
	for i, in := range ins {
		switch v := in.(type) {
		case bpf.LoadExtension:
			off := map[bpf.Extension]uint32{bpf.ExtType: 0, bpf.ExtInterfaceIndex: 4, bpf.ExtLinkLayerType: 8}
			o, ok := off[v.Num]
			if !ok {
				t.Fatalf("extension %d not emulated", v.Num)
			}
			out[i] = bpf.LoadAbsolute{Off: o, Size: 4}
		case bpf.LoadAbsolute:
			v.Off += emuPrefix
			out[i] = v
		case bpf.LoadIndirect:
			v.Off += emuPrefix
			out[i] = v
		case bpf.LoadMemShift:
			v.Off += emuPrefix
			out[i] = v
		default:
			out[i] = in
		}
	}
	return out
}

func withMeta(pktType, ifindex, hatype uint32, frame []byte) []byte {
	b := make([]byte, emuPrefix, emuPrefix+len(frame))
	for i, v := range []uint32{pktType, ifindex, hatype} {
		b[4*i], b[4*i+1], b[4*i+2], b[4*i+3] = byte(v>>24), byte(v>>16), byte(v>>8), byte(v)
	}
	return append(b, frame...)
}

func TestBPFLoopbackDuplicates(t *testing.T) {
	const (
		host     = 0 // PACKET_HOST
		outgoing = pktTypeOutgoing
		lo       = 1
		eth0     = 2
	)
	frame := buildFrame(t, frameSpec{src: 40000, dst: 9092})
	other := buildFrame(t, frameSpec{src: 40000, dst: 80})
	cases := []struct {
		name                 string
		spec                 filterSpec
		pktType, idx, hatype uint32
		frame                []byte
		keep                 bool
	}{
		{"lo: arriving copy kept", filterSpec{dropOutgoing: true}, host, lo, arphrdLoopback, frame, true},
		{"lo: leaving copy dropped", filterSpec{dropOutgoing: true}, outgoing, lo, arphrdLoopback, frame, false},
		{"lo: other port", filterSpec{dropOutgoing: true}, host, lo, arphrdLoopback, other, false},
		{"any: lo arriving kept", filterSpec{loopbackIfindex: []int{lo}, ethernetOnly: true}, host, lo, arphrdLoopback, frame, true},
		{"any: lo leaving dropped", filterSpec{loopbackIfindex: []int{lo}, ethernetOnly: true}, outgoing, lo, arphrdLoopback, frame, false},
		{"any: eth0 leaving kept", filterSpec{loopbackIfindex: []int{lo}, ethernetOnly: true}, outgoing, eth0, arphrdEther, frame, true},
		{"any: eth0 arriving kept", filterSpec{loopbackIfindex: []int{lo}, ethernetOnly: true}, host, eth0, arphrdEther, frame, true},
		{"any: eth0 other port", filterSpec{loopbackIfindex: []int{lo}, ethernetOnly: true}, host, eth0, arphrdEther, other, false},
		{"any: second loopback leaving dropped", filterSpec{loopbackIfindex: []int{lo, 9}, ethernetOnly: true}, outgoing, 9, arphrdLoopback, frame, false},
		{"any: raw-IP interface dropped", filterSpec{loopbackIfindex: []int{lo}, ethernetOnly: true}, host, 5, arphrdNone, frame, false},
		{"eth0: leaving kept", filterSpec{}, outgoing, eth0, arphrdEther, frame, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := c.spec
			spec.ports, spec.snapLen = []uint16{9092}, 65535
			ins, err := buildFilter(spec)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bpf.Assemble(ins); err != nil {
				t.Fatal(err)
			}
			got := runFilter(t, emulate(t, ins), withMeta(c.pktType, c.idx, c.hatype, c.frame))
			if (got > 0) != c.keep {
				t.Errorf("kept %d bytes, want keep=%v", got, c.keep)
			}
		})
	}
}

func TestBPFManyPorts(t *testing.T) {
	var ports []uint16
	for p := uint16(9000); p < 9200; p++ {
		ports = append(ports, p)
	}
	spec := filterSpec{ports: ports, snapLen: 65535}
	if _, err := buildFilter(spec); err != errFilterTooLong {
		t.Fatalf("200 ports: %v, want errFilterTooLong", err)
	}
	raw, err := socketFilter(spec)
	if err != nil {
		t.Fatal(err)
	}
	// The fallback keeps all TCP (the decoder filters the ports).
	ins := make([]bpf.Instruction, len(raw))
	for i, r := range raw {
		ins[i] = r.Disassemble()
	}
	if got := runFilter(t, ins, buildFrame(t, frameSpec{src: 1, dst: 2})); got == 0 {
		t.Error("fallback filter dropped TCP")
	}
	if got := runFilter(t, ins, buildFrame(t, frameSpec{udp: true, src: 1, dst: 9100})); got != 0 {
		t.Error("fallback filter kept UDP")
	}
	// 40 ports still fit.
	if _, err := buildFilter(filterSpec{ports: ports[:40], snapLen: 1}); err != nil {
		t.Errorf("40 ports: %v", err)
	}
}
