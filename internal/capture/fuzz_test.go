package capture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture/capturetest"
)

// FuzzFile reads arbitrary bytes as a capture file: it must end with
// io.EOF or a *DamageError whose offset lies in the file, never a panic
// or a huge allocation, and keep no more secrets than the file holds.
func FuzzFile(f *testing.F) {
	if real, err := os.ReadFile("../../testdata/captures/produce-lz4-and-ids.pcapng"); err == nil {
		f.Add(real[:min(len(real), 4096)])
	}
	if real, err := os.ReadFile("../../testdata/captures/lost-first-responses.pcap"); err == nil {
		f.Add(real[:min(len(real), 4096)])
	}
	f.Add([]byte{0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 1, 0, 0, 0})
	f.Add([]byte{0x0a, 0x0d, 0x0d, 0x0a, 0x1c, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x1c, 0, 0, 0})
	// A pcapng with a Decryption Secrets Block between its packets.
	var withSecrets bytes.Buffer
	if w, err := NewPcapNGWriter(&withSecrets, layers.LinkTypeEthernet, 0); err == nil {
		pkt := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 8, 0}
		_ = w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(pkt), Length: len(pkt)}, pkt)
		_ = w.WriteSecrets([]byte("CLIENT_RANDOM 00 11\n"))
		_ = w.WritePacket(gopacket.CaptureInfo{CaptureLength: len(pkt), Length: len(pkt)}, pkt)
		_ = w.Flush()
		f.Add(withSecrets.Bytes())
	}
	for _, seed := range fuzzSeeds() {
		f.Add(seed)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cf, err := OpenFile(path)
		if err != nil {
			return
		}
		defer cf.Close()
		dec := NewDecoder()
		var secrets int
		for i := 0; i < 10000; i++ {
			pkt, _, link, err := cf.Next()
			secrets += len(cf.Secrets())
			if secrets > len(data) {
				t.Fatalf("%d bytes of secrets from a %d-byte file", secrets, len(data))
			}
			if errors.Is(err, io.EOF) {
				return
			}
			var d *DamageError
			if errors.As(err, &d) {
				if d.Offset < 0 || d.Offset > int64(len(data)) {
					t.Fatalf("damage at byte offset %d of a %d-byte file: %v", d.Offset, len(data), err)
				}
				return
			}
			if err != nil {
				t.Fatalf("error is neither io.EOF nor damage: %v", err)
			}
			if off := cf.Offset(); off > int64(len(data)) {
				t.Fatalf("offset %d past the end of a %d-byte file", off, len(data))
			}
			dec.Decode(pkt, link)
		}
	})
}

// fuzzSeeds are small generated files: pcap and pcapng of a TCP
// connection, with secrets blocks, a simple packet block, and cut short.
func fuzzSeeds() [][]byte {
	c := capturetest.NewConn(capturetest.ClientAddr(1), capturetest.Broker)
	pkts := append(c.Handshake(), c.Send(true, capturetest.RequestHeader(20, 18, 3, 1, "x"), 1448)...)
	var pcap bytes.Buffer
	if w, err := capturetest.NewPcapWriter(&pcap, layers.LinkTypeRaw); err == nil {
		_ = w.Write(pkts...)
	}
	blocks := []capturetest.Block{capturetest.SHB(), capturetest.IDB(layers.LinkTypeRaw),
		capturetest.DSB([]byte(capturetest.KeyLogLine(1))), capturetest.EPB(pkts[0]),
		{Type: ngSPB, Body: append([]byte{byte(len(pkts[1].Data)), 0, 0, 0}, pkts[1].Data...)},
		capturetest.DSB([]byte(capturetest.KeyLogLine(2))), capturetest.EPB(pkts[2])}
	var ng bytes.Buffer
	_ = capturetest.WriteBlocks(&ng, blocks...)
	user := bytes.Clone(pcap.Bytes())
	user[20] = 147 // LINKTYPE_USER0
	return [][]byte{pcap.Bytes(), ng.Bytes(), pcap.Bytes()[:pcap.Len()-10], ng.Bytes()[:ng.Len()-30], user}
}
