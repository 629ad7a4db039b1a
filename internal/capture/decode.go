package capture

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// Segment is one TCP segment with the network flow it travelled on. It
// points into the decoder's reusable layers and the packet's bytes: valid
// until the next Decode.
type Segment struct {
	NetFlow gopacket.Flow
	TCP     *layers.TCP
}

// Decoder decodes link, network and transport layers without allocating per
// packet (gopacket's DecodingLayerParser over reused layer structs).
type Decoder struct {
	eth   layers.Ethernet
	dot1q layers.Dot1Q
	sll   layers.LinuxSLL
	sll2  layers.LinuxSLL2
	loop  layers.Loopback
	ip4   layers.IPv4
	ip6   layers.IPv6
	tcp   layers.TCP
	// one parser per first layer: DecodingLayerParser's first layer is
	// fixed at creation; they share the layer structs above.
	parsers map[gopacket.LayerType]*gopacket.DecodingLayerParser
	types   []gopacket.LayerType

	// Counters of packets that carried no TCP segment we could use.
	NotTCP          int64 // other protocols (UDP, ARP, ...)
	Undecodable     int64 // damaged or unsupported headers
	Fragments       int64 // IPv4 fragments (not reassembled)
	UnsupportedLink int64 // packets of a link type the decoder does not read
}

// NewDecoder returns a decoder for all supported link types.
func NewDecoder() *Decoder {
	d := &Decoder{parsers: make(map[gopacket.LayerType]*gopacket.DecodingLayerParser)}
	// The layers found by indexing a slice with their type, not by a map
	// lookup at every layer of every packet (gopacket's default container:
	// a tenth of the packet decoding's time in the agent).
	var dlc gopacket.DecodingLayerContainer = gopacket.DecodingLayerSparse(nil)
	for _, l := range []gopacket.DecodingLayer{&d.eth, &d.dot1q, &d.sll, &d.sll2, &d.loop, &d.ip4, &d.ip6, &d.tcp} {
		dlc = dlc.Put(l)
	}
	for _, first := range []gopacket.LayerType{layers.LayerTypeEthernet, layers.LayerTypeLinuxSLL,
		layers.LayerTypeLinuxSLL2, layers.LayerTypeLoopback, layers.LayerTypeIPv4, layers.LayerTypeIPv6} {
		p := gopacket.NewDecodingLayerParser(first)
		p.SetDecodingLayerContainer(dlc)
		p.IgnoreUnsupported = true
		d.parsers[first] = p
	}
	d.types = make([]gopacket.LayerType, 0, 8)
	return d
}

// firstLayer maps a capture link type to the layer its frames start with.
func firstLayer(link layers.LinkType, data []byte) (gopacket.LayerType, bool) {
	switch link {
	case layers.LinkTypeEthernet:
		return layers.LayerTypeEthernet, true
	case layers.LinkTypeLinuxSLL:
		return layers.LayerTypeLinuxSLL, true
	case layers.LinkTypeLinuxSLL2:
		return layers.LayerTypeLinuxSLL2, true
	case layers.LinkTypeNull, layers.LinkTypeLoop:
		return layers.LayerTypeLoopback, true
	case layers.LinkTypeIPv4:
		return layers.LayerTypeIPv4, true
	case layers.LinkTypeIPv6:
		return layers.LayerTypeIPv6, true
	case layers.LinkTypeRaw, 12: // 12: LINKTYPE_RAW's old DLT value on some systems
		if len(data) == 0 {
			return 0, false
		}
		switch data[0] >> 4 {
		case 4:
			return layers.LayerTypeIPv4, true
		case 6:
			return layers.LayerTypeIPv6, true
		}
	}
	return 0, false
}

// Decode decodes one packet. ok is false when it holds no usable TCP
// segment; the reason is counted.
func (d *Decoder) Decode(data []byte, link layers.LinkType) (seg Segment, ok bool) {
	first, known := firstLayer(link, data)
	if !known {
		if linkSupported(link) {
			d.Undecodable++ // raw IP that is neither IPv4 nor IPv6
		} else {
			d.UnsupportedLink++
		}
		return seg, false
	}
	d.types = d.types[:0]
	err := d.parsers[first].DecodeLayers(data, &d.types)
	var haveIP4, haveIP6, haveTCP bool
	for _, t := range d.types {
		switch t {
		case layers.LayerTypeIPv4:
			haveIP4 = true
		case layers.LayerTypeIPv6:
			haveIP6 = true
		case layers.LayerTypeTCP:
			haveTCP = true
		}
	}
	if haveIP4 && d.ip4.Flags&layers.IPv4MoreFragments != 0 || haveIP4 && d.ip4.FragOffset != 0 {
		d.Fragments++
		return seg, false
	}
	if !haveTCP {
		// A decoding error counts as damage when the packet was
		// meant to carry TCP (or its network layer did not decode);
		// the layers are reused, so only this packet's are read.
		tcpMeant := haveIP4 && d.ip4.Protocol == layers.IPProtocolTCP || haveIP6 && d.ip6.NextHeader == layers.IPProtocolTCP
		if err != nil && (tcpMeant || !haveIP4 && !haveIP6) {
			d.Undecodable++
		} else {
			d.NotTCP++
		}
		return seg, false
	}
	if haveIP4 {
		seg.NetFlow = d.ip4.NetworkFlow()
	} else {
		seg.NetFlow = d.ip6.NetworkFlow()
	}
	seg.TCP = &d.tcp
	return seg, true
}
