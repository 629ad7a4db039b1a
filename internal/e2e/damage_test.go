package e2e

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/event"
)

// packet is one packet of a capture, with what the damage checks need.
type packet struct {
	data []byte
	ci   gopacket.CaptureInfo
	conn string // "a|b" of the two endpoints, sorted, or "" when not TCP
	syn  bool
	id   string // source, sequence number, length and flags: the same packet in another capture
}

func readPackets(t *testing.T, path string) ([]packet, layers.LinkType) {
	t.Helper()
	f, err := capture.OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := capture.NewDecoder()
	var out []packet
	var link layers.LinkType
	for {
		buf, ci, lt, err := f.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		link = lt
		data := append([]byte(nil), buf...)
		ci.AncillaryData = nil
		p := packet{data: data, ci: ci}
		if seg, ok := dec.Decode(data, link); ok {
			// Numeric ports, as event.Request names endpoints
			// (TCPPort.String adds service names to some numbers).
			a := fmt.Sprintf("%s:%d", seg.NetFlow.Src(), uint16(seg.TCP.SrcPort))
			b := fmt.Sprintf("%s:%d", seg.NetFlow.Dst(), uint16(seg.TCP.DstPort))
			if a > b {
				a, b = b, a
			}
			p.conn, p.syn = a+"|"+b, seg.TCP.SYN
			t := seg.TCP
			p.id = fmt.Sprintf("%s:%d|%d|%d|%v%v%v%v|%d", seg.NetFlow.Src(), t.SrcPort, t.Seq, len(t.Payload), t.SYN, t.FIN, t.RST, t.ACK, t.Ack)
		}
		out = append(out, p)
	}
	return out, link
}

// missingFrom returns the packets of a that b does not have.
func missingFrom(a, b []packet) []packet {
	have := make(map[string]bool, len(b))
	for _, p := range b {
		have[p.id] = true
	}
	var out []packet
	for _, p := range a {
		if p.id != "" && !have[p.id] {
			out = append(out, p)
		}
	}
	return out
}

func writePackets(t *testing.T, path string, link layers.LinkType, pkts []packet) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := pcapgo.NewWriterNanos(f)
	if err := w.WriteFileHeader(262144, link); err != nil {
		t.Fatal(err)
	}
	for _, p := range pkts {
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
}

// damaged is a derived capture and the packets its damage touched.
type damaged struct {
	name    string
	pkts    []packet
	touched []packet // dropped packets (for touch checks), or nil
	// untouched reports whether a clean request must decode exactly.
	untouched func(r *event.Request) bool
	// minShare of the clean requests that must be decoded exactly.
	minShare float64
}

// touches reports whether any touched packet of r's connection falls in
// [arrival, end] (or after arrival for unanswered requests).
func touches(touched []packet, r *event.Request) bool {
	a, b := r.Client, r.Broker
	if a > b {
		a, b = b, a
	}
	conn := a + "|" + b
	for _, p := range touched {
		if p.conn != conn || p.ci.Timestamp.Before(r.Arrival) {
			continue
		}
		if !r.Answered || !p.ci.Timestamp.After(r.End) {
			return true
		}
	}
	return false
}

func derive(pkts []packet) []damaged {
	rng := rand.New(rand.NewPCG(2, 11))
	var out []damaged

	var kept, dropped []packet
	for _, p := range pkts {
		if rng.Float64() < 0.05 {
			dropped = append(dropped, p)
		} else {
			kept = append(kept, p)
		}
	}
	out = append(out, damaged{name: "drop5pct", pkts: kept, touched: dropped,
		untouched: func(r *event.Request) bool { return !touches(dropped, r) }, minShare: 0.6})

	// A packet overtaken by the next one: contents swap, capture times stay
	// in order (a capture records arrival order). The requests whose
	// packets moved are touched: their first byte may now arrive later.
	reordered := append([]packet(nil), pkts...)
	var swapped []packet
	for i := 0; i+1 < len(reordered); i++ {
		if !reordered[i].syn && !reordered[i+1].syn && rng.Float64() < 0.05 {
			swapped = append(swapped, reordered[i], reordered[i+1])
			a, b := reordered[i].ci.Timestamp, reordered[i+1].ci.Timestamp
			reordered[i], reordered[i+1] = reordered[i+1], reordered[i]
			reordered[i].ci.Timestamp, reordered[i+1].ci.Timestamp = a, b
			i++
		}
	}
	out = append(out, damaged{name: "reorder5pct", pkts: reordered, touched: swapped,
		untouched: func(r *event.Request) bool { return !touches(swapped, r) }, minShare: 0.6})

	var dup []packet
	for _, p := range pkts {
		dup = append(dup, p)
		if rng.Float64() < 0.05 {
			dup = append(dup, p)
		}
	}
	out = append(out, damaged{name: "duplicate5pct", pkts: dup, untouched: func(*event.Request) bool { return true }, minShare: 1})

	cut := len(pkts) * 3 / 10
	cutAt := pkts[cut].ci.Timestamp
	out = append(out, damaged{name: "cut-first-30pct", pkts: pkts[cut:],
		untouched: func(r *event.Request) bool { return r.Arrival.After(cutAt) }, minShare: 0.5})
	return out
}

// checkDamaged decodes a damaged capture and compares with the clean one:
// every untouched request must be decoded exactly as from the clean capture.
func checkDamaged(t *testing.T, port int, clean []*event.Request, path string, untouched func(*event.Request) bool, minShare float64) {
	checkAgainst(t, port, clean, path, untouched, minShare, 0)
}

// checkAgainst is checkDamaged with a tolerance for times, for a capture
// taken by another tcpdump process (its own timestamps).
func checkAgainst(t *testing.T, port int, clean []*event.Request, path string, untouched func(*event.Request) bool, minShare float64, tolerance time.Duration) {
	t.Helper()
	got, res := decode(t, port, path)
	t.Logf("%s", res.FormatFooter())
	defer keepOnFailure(t, path)
	byKey := index(got)
	var want, exact int
	for _, c := range clean {
		if !untouched(c) {
			continue
		}
		want++
		g, ok := byKey.find(c.Client, c.CorrelationID, c.Arrival)
		if !ok {
			t.Errorf("untouched request lost: %s corr %d from %s at %s", c.API, c.CorrelationID, c.Client, c.Arrival.Format(time.RFC3339Nano))
			continue
		}
		if diff := sameRequest(c, g, tolerance); diff != "" {
			t.Errorf("untouched request %s corr %d from %s decoded differently: %s", c.API, c.CorrelationID, c.Client, diff)
			continue
		}
		exact++
	}
	share := float64(want) / float64(len(clean))
	t.Logf("%d of %d clean requests untouched by the damage (%.1f%%), %d decoded exactly", want, len(clean), 100*share, exact)
	if share < minShare {
		t.Errorf("only %.1f%% of requests counted as untouched; want at least %.0f%%: the damage check is too loose", 100*share, 100*minShare)
	}
}

func sameRequest(a, b *event.Request, tolerance time.Duration) string {
	ms := float64(tolerance) / float64(time.Millisecond)
	arrival := a.Arrival.Sub(b.Arrival)
	switch {
	case a.API != b.API || a.APIVersion != b.APIVersion:
		return "api " + b.API
	case a.Answered != b.Answered:
		return "answered differs"
	case math.Abs(a.LatencyMs-b.LatencyMs) > 0.001+2*ms || arrival > tolerance || arrival < -tolerance:
		return fmt.Sprintf("times differ: arrival %s end %s, want %s %s", b.Arrival.Format(time.RFC3339Nano),
			b.End.Format(time.RFC3339Nano), a.Arrival.Format(time.RFC3339Nano), a.End.Format(time.RFC3339Nano))
	case b.Partial && !a.Partial:
		return "marked partial"
	case a.Partial:
		// Damaged in the original capture already: what the body
		// said may be incomplete in both.
		return ""
	case len(a.Partitions) != len(b.Partitions):
		return "partition count differs"
	}
	for i := range a.Partitions {
		pa, pb := a.Partitions[i], b.Partitions[i]
		// A capture that lost the Metadata response naming a topic id
		// can only print the id (Produce/Fetch v13+).
		sameTopic := pa.Topic == pb.Topic || (pa.Topic == "" || pb.Topic == "") && pa.TopicID != "" && pa.TopicID == pb.TopicID
		if !sameTopic || pa.Partition != pb.Partition || pa.Records != pb.Records || len(pa.MessageIDs) != len(pb.MessageIDs) {
			return fmt.Sprintf("partition %+v, want %+v", pb, pa)
		}
		for j := range pa.MessageIDs {
			if pa.MessageIDs[j] != pb.MessageIDs[j] {
				return "message ids differ"
			}
		}
	}
	return ""
}

// testDamagedCaptures derives damaged captures from a clean one and checks
// that the decoder neither crashes nor loses what the damage did not touch.
func testDamagedCaptures(t *testing.T, run capturedRun, clean []*event.Request) {
	pkts, link := readPackets(t, run.pcap)
	dir := t.TempDir()
	for _, d := range derive(pkts) {
		t.Run(d.name, func(t *testing.T) {
			path := filepath.Join(dir, d.name+".pcap")
			writePackets(t, path, link, d.pkts)
			if run.keep != "" {
				copyFile(t, path, filepath.Join(run.keep, d.name+".pcap"))
			}
			checkDamaged(t, run.port, clean, path, d.untouched, d.minShare)
		})
	}
	for _, form := range relinkForms {
		t.Run(form.name, func(t *testing.T) {
			if link != layers.LinkTypeEthernet {
				t.Fatalf("capture link type %v, want Ethernet (tcpdump -i lo)", link)
			}
			var out []packet
			for _, p := range pkts {
				q := p
				q.data = form.relink(p.data)
				// Keep what the original frame lacked of its wire length.
				q.ci.Length = len(q.data) + p.ci.Length - p.ci.CaptureLength
				q.ci.CaptureLength = len(q.data)
				out = append(out, q)
			}
			path := filepath.Join(dir, form.name+".pcap")
			writePackets(t, path, form.link, out)
			checkDamaged(t, run.port, clean, path, func(*event.Request) bool { return true }, 1)
		})
	}
	t.Run("truncated", func(t *testing.T) {
		data, err := os.ReadFile(run.pcap)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "truncated.pcap")
		if err := os.WriteFile(path, data[:len(data)*7/10], 0o644); err != nil {
			t.Fatal(err)
		}
		_, res := decode(t, run.port, path)
		if len(res.Warnings) != 1 {
			t.Fatalf("want one truncation warning, got %v", res.Warnings)
		}
		t.Logf("warning: %v", res.Warnings[0])
		// Requests answered before the last complete packet are intact.
		full, _ := readPacketsUpTo(t, path)
		checkDamaged(t, run.port, clean, path, func(r *event.Request) bool {
			return r.Answered && r.End.Before(full)
		}, 0.5)
	})
}

// readPacketsUpTo returns the timestamp of the last packet that can be read
// completely from a truncated pcap.
func readPacketsUpTo(t *testing.T, path string) (time.Time, int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := pcapgo.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	n := 0
	for {
		_, ci, err := r.ReadPacketData()
		if err != nil {
			return last, n
		}
		last, n = ci.Timestamp, n+1
	}
}

// relinkForms rewrite the Ethernet frames of a loopback capture into the
// other link layers and network protocols real captures come in, so that
// the same real traffic goes through each decoding path.
var relinkForms = []struct {
	name   string
	link   layers.LinkType
	relink func(eth []byte) []byte
}{
	{"linux-cooked-v1", layers.LinkTypeLinuxSLL, func(eth []byte) []byte {
		// packet type, ARPHRD_LOOPBACK, address length, 8 address bytes, protocol
		h := []byte{0, 0, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, eth[12], eth[13]}
		return append(h, eth[14:]...)
	}},
	{"linux-cooked-v2", layers.LinkTypeLinuxSLL2, func(eth []byte) []byte {
		// protocol, reserved, interface index, ARPHRD_LOOPBACK, packet type, address length, 8 address bytes
		h := []byte{eth[12], eth[13], 0, 0, 0, 0, 0, 1, 0x03, 0x04, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0}
		return append(h, eth[14:]...)
	}},
	{"vlan", layers.LinkTypeEthernet, func(eth []byte) []byte {
		h := append(append([]byte(nil), eth[:12]...), 0x81, 0x00, 0x00, 0x2a, eth[12], eth[13])
		return append(h, eth[14:]...)
	}},
	{"raw-ip", layers.LinkTypeRaw, func(eth []byte) []byte { return append([]byte(nil), eth[14:]...) }},
	{"ipv6", layers.LinkTypeEthernet, toIPv6},
}

// toIPv6 rewrites an Ethernet/IPv4 frame as Ethernet/IPv6 between
// fd00::<v4 address>, keeping the TCP segment as it is (checksums are not
// verified by decoders of captures, where offload leaves them wrong anyway).
func toIPv6(eth []byte) []byte {
	if len(eth) < 34 || eth[12] != 0x08 || eth[13] != 0x00 {
		return append([]byte(nil), eth...)
	}
	ip := eth[14:]
	ihl := int(ip[0]&0x0f) * 4
	total := int(ip[2])<<8 | int(ip[3])
	if ihl < 20 || total > len(ip) || total < ihl {
		return append([]byte(nil), eth...)
	}
	payload := ip[ihl:total]
	out := append(append([]byte(nil), eth[:12]...), 0x86, 0xdd)
	h := make([]byte, 40)
	h[0] = 0x60
	h[4], h[5] = byte(len(payload)>>8), byte(len(payload))
	h[6], h[7] = ip[9], 64
	h[8], h[9] = 0xfd, 0x00
	copy(h[20:24], ip[12:16])
	h[24], h[25] = 0xfd, 0x00
	copy(h[36:40], ip[16:20])
	return append(append(out, h...), payload...)
}

// keepOnFailure copies a capture that a failed check read to a directory
// that outlives the test, and says where.
func keepOnFailure(t *testing.T, path string) {
	if !t.Failed() {
		return
	}
	dir, err := os.MkdirTemp("", "kscope-e2e-failed-")
	if err != nil {
		return
	}
	copyFile(t, path, filepath.Join(dir, filepath.Base(path)))
	t.Logf("kept %s in %s", filepath.Base(path), dir)
}
