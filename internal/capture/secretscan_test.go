package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// ngPart is a piece of a test pcapng: packets of the given sizes, or
// secrets (a TLS key log block).
type ngPart struct {
	packets []int
	secrets string
}

// buildNG writes a little-endian pcapng of parts and returns it and the
// offset of each secrets block.
func buildNG(t testing.TB, parts ...ngPart) ([]byte, []int64) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewPcapNGWriter(&buf, layers.LinkTypeEthernet, 0)
	if err != nil {
		t.Fatal(err)
	}
	var offsets []int64
	for _, p := range parts {
		for _, n := range p.packets {
			pkt := make([]byte, n)
			if err := w.WritePacket(gopacket.CaptureInfo{CaptureLength: n, Length: n}, pkt); err != nil {
				t.Fatal(err)
			}
		}
		if p.secrets != "" {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			offsets = append(offsets, int64(buf.Len()))
			if err := w.WriteSecrets([]byte(p.secrets)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), offsets
}

// bigEndianNG is a big-endian section header and one secrets block.
func bigEndianNG(secrets string) []byte {
	var b bytes.Buffer
	be := binary.BigEndian
	shb := make([]byte, 28)
	be.PutUint32(shb[0:], ngSHB)
	be.PutUint32(shb[4:], 28)
	be.PutUint32(shb[8:], ngByteMagic)
	be.PutUint16(shb[12:], 1)
	be.PutUint64(shb[16:], ^uint64(0))
	be.PutUint32(shb[24:], 28)
	b.Write(shb)
	b.Write(secretsBlock(be, []byte(secrets)))
	return b.Bytes()
}

func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.pcapng")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReadSecrets: every TLS secrets block of a pcapng is found, before
// or after its packets, in either byte order, past packets larger than
// the read buffer; other files have none; damage and the limit stop the
// reading with an error, the blocks before them kept.
func TestReadSecrets(t *testing.T) {
	early, earlyAt := buildNG(t, ngPart{secrets: "A 1 2\n"}, ngPart{packets: []int{60, 60}})
	late, lateAt := buildNG(t, ngPart{packets: []int{60, 60}}, ngPart{secrets: "A 1 2\n"}, ngPart{packets: []int{60}, secrets: "B 3 4"})
	big, bigAt := buildNG(t, ngPart{packets: []int{600 << 10, 60}}, ngPart{secrets: "C 5 6\n"})
	other := append(bytes.Clone(early), secretsBlock(binary.LittleEndian, []byte("not a key log"))...)
	binary.LittleEndian.PutUint32(other[len(early)+8:], 0x57474b4c) // WireGuard keys
	var pcap bytes.Buffer
	pw := pcapgo.NewWriter(&pcap)
	if err := pw.WriteFileHeader(65535, layers.LinkTypeEthernet); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		limit   int64
		want    []SecretsBlock
		wantErr error
		errText string
	}{
		{"secrets first", writeTemp(t, early), 1 << 20, []SecretsBlock{{earlyAt[0], []byte("A 1 2\n")}}, nil, ""},
		{"secrets after their packets", writeTemp(t, late), 1 << 20,
			[]SecretsBlock{{lateAt[0], []byte("A 1 2\n")}, {lateAt[1], []byte("B 3 4\n")}}, nil, ""},
		{"after a packet larger than the buffer", writeTemp(t, big), 1 << 20, []SecretsBlock{{bigAt[0], []byte("C 5 6\n")}}, nil, ""},
		{"big-endian section", writeTemp(t, bigEndianNG("D 7 8\n")), 1 << 20, []SecretsBlock{{28, []byte("D 7 8\n")}}, nil, ""},
		{"secrets of another kind", writeTemp(t, other), 1 << 20, []SecretsBlock{{earlyAt[0], []byte("A 1 2\n")}}, nil, ""},
		{"pcap", writeTemp(t, pcap.Bytes()), 1 << 20, nil, nil, ""},
		{"empty file", writeTemp(t, nil), 1 << 20, nil, nil, ""},
		{"over the limit", writeTemp(t, late), 8, []SecretsBlock{{lateAt[0], []byte("A 1 2\n")}}, ErrSecretsLimit, "byte offset"},
		{"truncated in a block", writeTemp(t, late[:lateAt[1]+10]), 1 << 20, []SecretsBlock{{lateAt[0], []byte("A 1 2\n")}}, nil, "truncated"},
		{"a block longer than the file", writeTemp(t, late[:lateAt[1]+16]), 1 << 20, []SecretsBlock{{lateAt[0], []byte("A 1 2\n")}}, nil, "out of range"},
		{"a FIFO", fifo, 1 << 20, nil, safefile.ErrNotRegular, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadSecrets(tt.path, tt.limit)
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr),
				tt.errText != "" && (err == nil || !strings.Contains(err.Error(), tt.errText) || !strings.Contains(err.Error(), tt.path)),
				tt.wantErr == nil && tt.errText == "" && err != nil:
				t.Errorf("error %v, want %v / %q", err, tt.wantErr, tt.errText)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("%d blocks %+v, want %d", len(got), got, len(tt.want))
			}
			for i := range got {
				if got[i].Offset != tt.want[i].Offset || !bytes.Equal(got[i].KeyLog, tt.want[i].KeyLog) {
					t.Errorf("block %d: at %d %q, want at %d %q", i, got[i].Offset, got[i].KeyLog, tt.want[i].Offset, tt.want[i].KeyLog)
				}
			}
		})
	}
}

// FuzzReadSecrets: any bytes read for their secrets end without a panic,
// with no more secrets than the file's bytes, and a file whose blocks the
// packet reader's guard passes cleanly to the end gives the same secrets
// both ways.
func FuzzReadSecrets(f *testing.F) {
	late, _ := buildNG(f, ngPart{packets: []int{60, 60}}, ngPart{secrets: "A 1 2\n"}, ngPart{packets: []int{60}, secrets: "B 3 4"})
	f.Add(late)
	f.Add(bigEndianNG("D 7 8\n"))
	if real, err := os.ReadFile("../../testdata/captures/produce-lz4-and-ids.pcapng"); err == nil {
		f.Add(real[:min(len(real), 4096)])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "in")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		blocks, scanErr := ReadSecrets(path, 1<<20)
		var scanned []byte
		for _, b := range blocks {
			scanned = append(scanned, b.KeyLog...)
		}
		if len(scanned) > len(data)+len(blocks) {
			t.Fatalf("%d bytes of secrets from a %d-byte file", len(scanned), len(data))
		}
		guarded, clean := secretsThroughGuard(data)
		if clean && scanErr == nil && !bytes.Equal(guarded, scanned) {
			t.Fatalf("secrets through the packet reader's guard %q, scanned %q", guarded, scanned)
		}
	})
}

// secretsThroughGuard passes a pcapng's bytes through the guard the
// packet reader reads them through, which keeps the secrets blocks; clean
// says it reached the end without an error. Bytes that are not pcapng
// have none.
func secretsThroughGuard(data []byte) ([]byte, bool) {
	if len(data) < 4 || binary.LittleEndian.Uint32(data) != ngSHB {
		return nil, true
	}
	g := &ngGuard{r: bytes.NewReader(data), secrets: secretsKeeper{limit: 1 << 20}}
	_, err := io.Copy(io.Discard, g)
	return g.secrets.kept, err == nil
}

// BenchmarkReadSecrets: the cost of finding the secrets blocks of a
// capture before reading it (30 MB of 1500-byte packets, the block at
// the end), per byte of the file.
func BenchmarkReadSecrets(b *testing.B) {
	packets := make([]int, 20000)
	for i := range packets {
		packets[i] = 1500
	}
	data, _ := buildNG(b, ngPart{packets: packets}, ngPart{secrets: "A 1 2\n"})
	path := writeTemp(b, data)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if blocks, err := ReadSecrets(path, 1<<20); err != nil || len(blocks) != 1 {
			b.Fatal(blocks, err)
		}
	}
}
