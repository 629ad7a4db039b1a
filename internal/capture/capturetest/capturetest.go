// Package capturetest builds capture files for tests and measurements:
// TCP connections to a Kafka port, in pcap and pcapng, and the damaged and
// hostile files the capture and wire packages must survive. bench/gencapture
// writes the large ones from the command line.
package capturetest

import (
	"encoding/binary"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Packet is one captured packet.
type Packet struct {
	Data []byte
	CI   gopacket.CaptureInfo
}

// Start is the capture time of the first packet of every generated file.
var Start = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// Conn builds the raw IPv4 packets (LINKTYPE_RAW) of one TCP connection
// between a client and a broker; Now is the next packet's capture time.
type Conn struct {
	Client, Broker netip.AddrPort
	Now            time.Time
	cseq, bseq     uint32
}

// NewConn returns a connection from the client to the broker at Start.
func NewConn(client, broker netip.AddrPort) *Conn {
	return &Conn{Client: client, Broker: broker, Now: Start, cseq: 1000, bseq: 5000}
}

// ClientAddr is the address of the i-th generated client, on 10.1.0.0/16.
func ClientAddr(i int) netip.AddrPort {
	return netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 1, byte(i >> 8), byte(i)}), uint16(40000+i%20000))
}

// Broker is the broker of generated connections.
var Broker = netip.MustParseAddrPort("10.0.0.1:9092")

// Handshake returns the SYN and the SYN-ACK.
func (c *Conn) Handshake() []Packet {
	return []Packet{c.packet(true, nil, true), c.packet(false, nil, true)}
}

// Send returns payload from one side in segments of at most mss bytes.
func (c *Conn) Send(fromClient bool, payload []byte, mss int) []Packet {
	var out []Packet
	for len(payload) > 0 {
		n := min(mss, len(payload))
		out = append(out, c.packet(fromClient, payload[:n], false))
		payload = payload[n:]
	}
	return out
}

func (c *Conn) packet(fromClient bool, payload []byte, syn bool) Packet {
	tcp := &layers.TCP{SYN: syn, ACK: !syn || !fromClient, Window: 65535}
	ip := &layers.IPv4{Version: 4, TTL: 64, Protocol: layers.IPProtocolTCP}
	src, dst, seq := c.Client, c.Broker, &c.cseq
	if !fromClient {
		src, dst, seq = c.Broker, c.Client, &c.bseq
		tcp.Ack = c.cseq
	} else {
		tcp.Ack = c.bseq
	}
	ip.SrcIP, ip.DstIP = src.Addr().AsSlice(), dst.Addr().AsSlice()
	tcp.SrcPort, tcp.DstPort, tcp.Seq = layers.TCPPort(src.Port()), layers.TCPPort(dst.Port()), *seq
	*seq += uint32(len(payload))
	if syn {
		*seq++
	}
	tcp.SetNetworkLayerForChecksum(ip)
	buf := gopacket.NewSerializeBuffer()
	if err := gopacket.SerializeLayers(buf, gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true},
		ip, tcp, gopacket.Payload(payload)); err != nil {
		panic(fmt.Sprintf("capturetest: serialize: %v", err)) // only a programming error gets here
	}
	data := append([]byte(nil), buf.Bytes()...)
	p := Packet{Data: data, CI: gopacket.CaptureInfo{Timestamp: c.Now, CaptureLength: len(data), Length: len(data)}}
	c.Now = c.Now.Add(100 * time.Microsecond)
	return p
}

// RequestHeader is the start of a request frame: its size (body bytes
// after the 4-byte size), API key, version, correlation id and client
// id. The body that follows is the caller's.
func RequestHeader(size int32, key, version int16, corr int32, clientID string) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(size))
	b = binary.BigEndian.AppendUint16(b, uint16(key))
	b = binary.BigEndian.AppendUint16(b, uint16(version))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len(clientID)))
	return append(b, clientID...)
}

// APIVersionsRequest is a whole ApiVersions v0 request frame: a header
// and no body.
func APIVersionsRequest(corr int32, clientID string) []byte {
	return RequestHeader(int32(10+len(clientID)), 18, 0, corr, clientID)
}

// APIVersionsResponse is a whole ApiVersions v0 response frame: no error
// and no API listed.
func APIVersionsResponse(corr int32) []byte {
	b := binary.BigEndian.AppendUint32(nil, 10)
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 0)
	return binary.BigEndian.AppendUint32(b, 0)
}

// PcapWriter writes packets to a pcap stream (nanosecond timestamps).
type PcapWriter struct{ w *pcapgo.Writer }

// NewPcapWriter writes the file header for link.
func NewPcapWriter(w io.Writer, link layers.LinkType) (*PcapWriter, error) {
	pw := pcapgo.NewWriterNanos(w)
	if err := pw.WriteFileHeader(262144, link); err != nil {
		return nil, fmt.Errorf("capturetest: pcap header: %w", err)
	}
	return &PcapWriter{w: pw}, nil
}

// Write writes packets.
func (pw *PcapWriter) Write(pkts ...Packet) error {
	for _, p := range pkts {
		if err := pw.w.WritePacket(p.CI, p.Data); err != nil {
			return fmt.Errorf("capturetest: pcap packet: %w", err)
		}
	}
	return nil
}

// PartialFrames writes a pcap of conns connections that each send a
// produce request announced as frameBytes+4096 bytes long and only
// frameBytes of it: every connection holds an unfinished frame of
// frameBytes when the capture ends. What kscope keeps of frames in
// progress across connections is what this measures.
func PartialFrames(w io.Writer, conns, frameBytes int) error {
	pw, err := NewPcapWriter(w, layers.LinkTypeRaw)
	if err != nil {
		return err
	}
	for i := range conns {
		c := NewConn(ClientAddr(i), Broker)
		c.Now = Start.Add(time.Duration(i) * time.Millisecond)
		frame := RequestHeader(int32(frameBytes+4096), 0, 9, 1, "gen")
		frame = append(frame, make([]byte, max(0, frameBytes-len(frame)))...)
		if err := pw.Write(c.Handshake()...); err != nil {
			return err
		}
		if err := pw.Write(c.Send(true, frame, 1448)...); err != nil {
			return err
		}
	}
	return nil
}
