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
)

// FuzzFile reads arbitrary bytes as a capture file: it must end with
// io.EOF or an error, never a panic or a huge allocation.
func FuzzFile(f *testing.F) {
	if real, err := os.ReadFile("../../testdata/captures/produce-lz4-and-ids.pcapng"); err == nil {
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
		for i := 0; i < 10000; i++ {
			pkt, _, link, err := cf.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return
				}
				return
			}
			dec.Decode(pkt, link)
			if s := cf.Secrets(); len(s) > len(data) {
				t.Fatalf("%d bytes of secrets from a %d-byte file", len(s), len(data))
			}
		}
	})
}
