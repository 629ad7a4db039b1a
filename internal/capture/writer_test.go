package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// TestPcapNGSecretsRoundTrip: Decryption Secrets Blocks written between
// packets come back, in order, as the packets after them are read; the
// packets are not disturbed.
func TestPcapNGSecretsRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcapNGWriter(&buf, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	logs := []string{"CLIENT_RANDOM " + strings.Repeat("ab", 32) + " " + strings.Repeat("cd", 48) + "\n", "# odd length\n", "SERVER_TRAFFIC_SECRET_0 x y\n"}
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	for i := range 6 {
		if i%2 == 0 {
			if err := w.WriteSecrets([]byte(logs[i/2])); err != nil {
				t.Fatal(err)
			}
		}
		data := buildFrame(t, frameSpec{src: 40000, dst: 9092, payload: i})
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(data), Length: len(data)}, data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "secrets.pcapng")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	cf, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	var got []string
	packets := 0
	for {
		_, _, _, err := cf.Next()
		if s := cf.Secrets(); s != nil {
			got = append(got, string(s))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		packets++
	}
	if packets != 6 || strings.Join(got, "") != strings.Join(logs, "") {
		t.Errorf("%d packets, secrets %q; want 6, %q", packets, got, logs)
	}

	// A block whose secrets length exceeds it is an error naming where.
	bad := bytes.Clone(buf.Bytes())
	i := bytes.Index(bad, []byte{0x0a, 0, 0, 0})
	for ; i >= 0; i = bytes.Index(bad[i+1:], []byte{0x0a, 0, 0, 0}) + i + 1 {
		if i%4 == 0 && i > 0 && binary.LittleEndian.Uint32(bad[i+8:]) == SecretsTLSKeyLog {
			break
		}
	}
	binary.LittleEndian.PutUint32(bad[i+12:], 1<<20)
	if err := os.WriteFile(path, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	cf2, err := OpenFile(path)
	if err == nil {
		defer cf2.Close()
		for err == nil {
			_, _, _, err = cf2.Next()
		}
	}
	if err == nil || errors.Is(err, io.EOF) || !strings.Contains(err.Error(), "secrets length") {
		t.Errorf("a damaged secrets block: %v", err)
	}
}

// TestInjectSecrets: secrets blocks written late (after the packets they
// are for) are replaced by one set right after the section header, split
// into blocks readers accept; the packets are unchanged.
func TestInjectSecrets(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewPcapNGWriter(&buf, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var keyLog []byte
	for i := range 3000 { // a key log of ~700 KiB: more than one block
		keyLog = fmt.Appendf(keyLog, "CLIENT_RANDOM %064x %096x\n", i, i)
	}
	for i := range 10 {
		data := buildFrame(t, frameSpec{src: 40000, dst: 9092, payload: i})
		if err := w.WritePacket(gopacket.CaptureInfo{Timestamp: base.Add(time.Duration(i) * time.Millisecond), CaptureLength: len(data), Length: len(data)}, data); err != nil {
			t.Fatal(err)
		}
		if i == 5 {
			if err := w.WriteSecrets(keyLog[:1000]); err != nil { // late, and partial
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "c.pcapng")
	if err := os.WriteFile(path, buf.Bytes(), 0o640); err != nil {
		t.Fatal(err)
	}
	if err := InjectSecrets(path, keyLog); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("mode after the rewrite: %v %v", st, err)
	}
	cf, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer cf.Close()
	var secrets []byte
	packets := 0
	for {
		_, _, _, err := cf.Next()
		if s := cf.Secrets(); s != nil {
			if packets > 0 {
				t.Errorf("secrets after packet %d", packets)
			}
			secrets = append(secrets, s...)
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
		packets++
	}
	if packets != 10 || !bytes.Equal(secrets, keyLog) {
		t.Errorf("%d packets, %d bytes of secrets; want 10 and the key log's %d", packets, len(secrets), len(keyLog))
	}
}
