package capture

import (
	"net"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// serialize builds one packet from layers, with lengths and checksums fixed.
func serialize(t *testing.T, ls ...gopacket.SerializableLayer) []byte {
	t.Helper()
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}, ls...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeLinkTypes(t *testing.T) {
	payload := gopacket.Payload("kafka")
	ip4 := func() *layers.IPv4 {
		return &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP,
			SrcIP: net.IPv4(10, 0, 0, 1).To4(), DstIP: net.IPv4(10, 0, 0, 2).To4()}
	}
	ip6 := func() *layers.IPv6 {
		return &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: layers.IPProtocolTCP,
			SrcIP: net.ParseIP("fd00::1"), DstIP: net.ParseIP("fd00::2")}
	}
	tcp := func(ip gopacket.NetworkLayer) *layers.TCP {
		l := &layers.TCP{SrcPort: 40000, DstPort: 9092, Seq: 7, ACK: true, PSH: true, Window: 512}
		l.SetNetworkLayerForChecksum(ip)
		return l
	}
	eth := func(typ layers.EthernetType) *layers.Ethernet {
		return &layers.Ethernet{SrcMAC: net.HardwareAddr{2, 0, 0, 0, 0, 1}, DstMAC: net.HardwareAddr{2, 0, 0, 0, 0, 2}, EthernetType: typ}
	}
	v4, v6 := ip4(), ip6()
	cases := []struct {
		name string
		link layers.LinkType
		data []byte
	}{
		{"ethernet ipv4", layers.LinkTypeEthernet, serialize(t, eth(layers.EthernetTypeIPv4), v4, tcp(v4), payload)},
		{"ethernet vlan ipv6", layers.LinkTypeEthernet, serialize(t, eth(layers.EthernetTypeDot1Q),
			&layers.Dot1Q{VLANIdentifier: 42, Type: layers.EthernetTypeIPv6}, v6, tcp(v6), payload)},
		{"loopback null", layers.LinkTypeNull, serialize(t, &layers.Loopback{Family: layers.ProtocolFamilyIPv4}, v4, tcp(v4), payload)},
		{"raw ipv6", layers.LinkTypeRaw, serialize(t, v6, tcp(v6), payload)},
		{"ipv4 link type", layers.LinkTypeIPv4, serialize(t, v4, tcp(v4), payload)},
	}
	// Linux cooked v1 (packet type, ARPHRD, addr len, 8 addr bytes,
	// protocol) and v2 have no serializer: their headers by hand.
	sll1 := []byte{0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0, 0x08, 0x00}
	cases = append(cases, struct {
		name string
		link layers.LinkType
		data []byte
	}{"linux cooked v1", layers.LinkTypeLinuxSLL, append(sll1, serialize(t, v4, tcp(v4), payload)...)})
	// Linux cooked v2: its 20-byte header by hand
	// (protocol, reserved, ifindex, arphrd, packet type, addr len, addr).
	sll2 := []byte{0x08, 0x00, 0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0}
	cases = append(cases, struct {
		name string
		link layers.LinkType
		data []byte
	}{"linux cooked v2", layers.LinkTypeLinuxSLL2, append(sll2, serialize(t, v4, tcp(v4), payload)...)})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder()
			seg, ok := d.Decode(c.data, c.link)
			if !ok {
				t.Fatalf("not decoded (undecodable %d, not tcp %d)", d.Undecodable, d.NotTCP)
			}
			if seg.TCP.DstPort != 9092 || string(seg.TCP.Payload) != "kafka" || seg.NetFlow.Src().String() == "" {
				t.Errorf("segment: ports %v->%v payload %q flow %v", seg.TCP.SrcPort, seg.TCP.DstPort, seg.TCP.Payload, seg.NetFlow)
			}
		})
	}
}

func TestDecodeNotTCP(t *testing.T) {
	v4 := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolUDP, SrcIP: net.IPv4(10, 0, 0, 1).To4(), DstIP: net.IPv4(10, 0, 0, 2).To4()}
	udp := &layers.UDP{SrcPort: 1, DstPort: 2}
	udp.SetNetworkLayerForChecksum(v4)
	d := NewDecoder()
	if _, ok := d.Decode(serialize(t, v4, udp, gopacket.Payload("x")), layers.LinkTypeRaw); ok || d.NotTCP != 1 {
		t.Errorf("udp: ok=%v notTCP=%d", ok, d.NotTCP)
	}
	if _, ok := d.Decode([]byte{0x45, 0, 0}, layers.LinkTypeRaw); ok || d.Undecodable != 1 {
		t.Errorf("truncated ip: ok=%v undecodable=%d", ok, d.Undecodable)
	}
	if _, ok := d.Decode([]byte{1, 2, 3}, layers.LinkType(147)); ok || d.Undecodable != 1 || d.UnsupportedLink != 1 {
		t.Errorf("unknown link: ok=%v undecodable=%d unsupported link=%d", ok, d.Undecodable, d.UnsupportedLink)
	}
}
