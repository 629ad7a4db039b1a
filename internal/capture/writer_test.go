package capture

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
)

func TestPcapNGWriterRoundTrip(t *testing.T) {
	const snap = 200
	base := time.Date(2026, 3, 4, 5, 6, 7, 123456789, time.UTC)
	type pkt struct {
		ci   gopacket.CaptureInfo
		data []byte
	}
	var in []pkt
	for i := range 50 {
		data := buildFrame(t, frameSpec{src: 40000, dst: 9092, payload: i * 7})
		in = append(in, pkt{gopacket.CaptureInfo{
			Timestamp:      base.Add(time.Duration(i)*time.Millisecond + time.Duration(i)), // nanoseconds differ
			CaptureLength:  len(data),
			Length:         len(data),
			InterfaceIndex: 3, // a kernel ifindex: the writer has one interface
		}, data})
	}
	path := filepath.Join(t.TempDir(), "out.pcapng")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewPcapNGWriter(f, layers.LinkTypeEthernet, snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range in {
		if err := w.WritePacket(p.ci, p.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	cf, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	if cf.Format != FormatPcapNG {
		t.Fatalf("format %s", cf.Format)
	}
	dec := NewDecoder()
	for i := 0; ; i++ {
		data, ci, link, err := cf.Next()
		if errors.Is(err, io.EOF) {
			if i != len(in) {
				t.Fatalf("read %d packets, wrote %d", i, len(in))
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		want := in[i]
		wantData := want.data[:min(len(want.data), snap)]
		if link != layers.LinkTypeEthernet {
			t.Errorf("packet %d: link %v", i, link)
		}
		if !ci.Timestamp.Equal(want.ci.Timestamp) {
			t.Errorf("packet %d: timestamp %v, wrote %v", i, ci.Timestamp, want.ci.Timestamp)
		}
		if ci.Length != len(want.data) || ci.CaptureLength != len(wantData) {
			t.Errorf("packet %d: length %d/%d, want %d/%d", i, ci.CaptureLength, ci.Length, len(wantData), len(want.data))
		}
		if !bytes.Equal(data, wantData) {
			t.Errorf("packet %d: bytes differ", i)
		}
		if seg, ok := dec.Decode(data, link); !ok || seg.TCP.DstPort != 9092 {
			t.Errorf("packet %d does not decode to TCP to 9092", i)
		}
	}
}
