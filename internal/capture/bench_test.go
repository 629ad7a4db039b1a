package capture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket/layers"
)

// BenchmarkReadPcapNG reads a pcapng of 20 000 packets of 1 000 bytes
// through the guard: what checking every block costs per packet.
func BenchmarkReadPcapNG(b *testing.B) {
	var buf bytes.Buffer
	w, err := NewPcapNGWriter(&buf, layers.LinkTypeRaw, 0)
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range testPackets(20000, 1000) {
		if err := w.WritePacket(p.CI, p.Data); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "bench.pcapng")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(buf.Len()))
	b.ReportAllocs()
	for b.Loop() {
		cf, err := OpenFile(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			_, _, _, err := cf.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		cf.Close()
		if n != 20000 {
			b.Fatalf("%d packets", n)
		}
	}
}

// BenchmarkDecode decodes the packets of a real capture (Ethernet, IPv4,
// TCP) from memory, link layer to TCP segment: the per-packet cost every
// command and the agent pay before reassembly.
func BenchmarkDecode(b *testing.B) {
	f, err := OpenFile("../../testdata/captures/produce-lz4-and-ids.pcapng")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	type packet struct {
		data []byte
		link layers.LinkType
	}
	var pkts []packet
	for {
		data, _, link, err := f.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		pkts = append(pkts, packet{append([]byte(nil), data...), link})
	}
	d := NewDecoder()
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pkts {
			d.Decode(p.data, p.link)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pkts)), "ns/packet")
}
