package wire

import (
	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

// A client's port can carry a new connection to the same broker port as
// soon as the old one is gone from the client's side: at once when the
// broker closed first (the broker keeps TIME_WAIT) or when either side
// reset. Reassembly knows connections by their addresses and ports only:
// it would take the new connection for more of the old one, and lose it
// (a SYN to a direction closed by a reset is dropped; a SYN after the
// stray ACK that follows both FINs is data after a gap of the difference
// between the two initial sequence numbers). A SYN without ACK, though,
// always opens a new connection, so the decoder ends the old stream there
// and assembles the new connection under a generation of its own: its
// packets reach reassembly with a network flow whose endpoint type
// carries the generation, a key no other connection has. The old stream
// is left to reassembly's idle flush; the generation is forgotten when the
// new connection ends.

// generationShift places a generation above any endpoint type gopacket
// registers (small integers).
const generationShift = 32

// generation is a reused connection's number and the network flow its
// packets in one direction are assembled under (kept, not rebuilt per
// packet).
type generation struct {
	id   uint64
	flow gopacket.Flow
}

// assemblyFlow returns the network flow to assemble a packet under: its
// own, or its connection's generation's. A SYN without ACK on a
// connection the decoder has a stream for, other than a retransmission of
// that stream's own SYN, starts a new generation and ends the old stream.
func (d *Decoder) assemblyFlow(netFlow gopacket.Flow, tcp *layers.TCP) gopacket.Flow {
	opens := tcp.SYN && !tcp.ACK
	if len(d.generations) == 0 && !opens {
		return netFlow
	}
	tcpFlow := tcp.TransportFlow()
	flow := netFlow
	if g, ok := d.generations[connKey{netFlow, tcpFlow}]; ok {
		flow = g.flow
	}
	if opens {
		if old := d.streamOf(flow, tcpFlow); old != nil && !old.ownSYN(tcp.Seq) {
			old.abort()
			d.lastGeneration++
			id := d.lastGeneration
			flow = withGeneration(netFlow, id)
			d.generations[connKey{netFlow, tcpFlow}] = generation{id, flow}
			d.generations[connKey{netFlow.Reverse(), tcpFlow.Reverse()}] = generation{id, flow.Reverse()}
		}
	}
	return flow
}

// withGeneration returns netFlow marked with generation id.
func withGeneration(netFlow gopacket.Flow, id uint64) gopacket.Flow {
	src, dst := netFlow.Endpoints()
	typ := netFlow.EndpointType() + gopacket.EndpointType(id<<generationShift)
	return gopacket.NewFlow(typ, src.Raw(), dst.Raw())
}

// splitGeneration returns the flow a packet was captured with and the
// generation its connection is assembled under (0 for none): what
// withGeneration put into flow.
func splitGeneration(flow gopacket.Flow) (gopacket.Flow, uint64) {
	id := uint64(flow.EndpointType()) >> generationShift
	if id == 0 {
		return flow, 0
	}
	src, dst := flow.Endpoints()
	typ := flow.EndpointType() & (1<<generationShift - 1)
	return gopacket.NewFlow(typ, src.Raw(), dst.Raw()), id
}

// streamOf returns the stream of the connection of a packet with these
// flows, in either direction, or nil.
func (d *Decoder) streamOf(netFlow, tcpFlow gopacket.Flow) *stream {
	if s := d.streams[connKey{netFlow, tcpFlow}]; s != nil {
		return s
	}
	return d.streams[connKey{netFlow.Reverse(), tcpFlow.Reverse()}]
}

// forgetGeneration drops s's generation when its connection ends, unless
// a newer connection on the same ports has replaced it.
func (d *Decoder) forgetGeneration(s *stream) {
	captured, id := splitGeneration(s.key.net)
	if id == 0 {
		return
	}
	for _, k := range [...]connKey{{captured, s.key.transport}, {captured.Reverse(), s.key.transport.Reverse()}} {
		if d.generations[k].id == id {
			delete(d.generations, k)
		}
	}
}

// ownSYN reports whether a SYN with sequence number seq is the stream's
// own (retransmitted).
func (s *stream) ownSYN(seq uint32) bool {
	return s.synSeen && s.synSeq == seq
}
