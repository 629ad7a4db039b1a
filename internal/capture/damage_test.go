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

	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture/capturetest"
)

// testPackets are n packets of a connection, each with payload bytes.
func testPackets(n, payload int) []capturetest.Packet {
	c := capturetest.NewConn(capturetest.ClientAddr(1), capturetest.Broker)
	pkts := c.Handshake()
	for len(pkts) < n {
		pkts = append(pkts, c.Send(true, make([]byte, payload), payload)...)
	}
	return pkts[:n]
}

// pcapFile is a pcap of pkts and the byte offset of each record.
func pcapFile(t *testing.T, pkts []capturetest.Packet) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	w, err := capturetest.NewPcapWriter(&buf, layers.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	var starts []int
	for _, p := range pkts {
		starts = append(starts, buf.Len())
		if err := w.Write(p); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes(), starts
}

// pcapngFile is a pcapng of blocks and the byte offset of each.
func pcapngFile(t *testing.T, blocks ...capturetest.Block) ([]byte, []int) {
	t.Helper()
	var buf bytes.Buffer
	var starts []int
	for _, b := range blocks {
		starts = append(starts, buf.Len())
		if err := capturetest.WriteBlocks(&buf, b); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes(), starts
}

// readFile reads a capture file to its end: the packets read, the key
// logs of its secrets blocks, and the error that ended it (nil for a
// clean end).
func readFile(t *testing.T, data []byte) (packets int, secrets []byte, err error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "in")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cf, err := OpenFile(path)
	if err != nil {
		return 0, nil, err
	}
	defer cf.Close()
	for {
		_, _, _, err := cf.Next()
		secrets = append(secrets, cf.Secrets()...)
		if errors.Is(err, io.EOF) {
			return packets, secrets, nil
		}
		if err != nil {
			return packets, secrets, err
		}
		packets++
	}
}

// TestDamagedFiles: a file that ends inside a record or block, or whose
// block lengths disagree, is damage reported at the byte offset where the
// record or block starts: not a clean end, and not where buffering had
// read to.
func TestDamagedFiles(t *testing.T) {
	pkts := testPackets(6, 100)
	pcap, rec := pcapFile(t, pkts)
	// 3000 packets of 1000 bytes: the damage lies past the reader's
	// first 2 MiB of read-ahead.
	big, bigRec := pcapFile(t, testPackets(3000, 1000))
	last := bigRec[len(bigRec)-1]
	badLen := bytes.Clone(pcap)
	binary.LittleEndian.PutUint32(badLen[rec[4]+8:], 5000) // captured length over original length

	epbs := []capturetest.Block{capturetest.SHB(), capturetest.IDB(layers.LinkTypeRaw)}
	for _, p := range pkts {
		epbs = append(epbs, capturetest.EPB(p))
	}
	ng, blk := pcapngFile(t, epbs...)
	withISB := append(bytes.Clone(ng), capturetest.Block{Type: 5, Body: make([]byte, 20)}.Bytes()...)
	withDSB := append(bytes.Clone(ng), capturetest.DSB([]byte(capturetest.KeyLogLine(1))).Bytes()...)
	mismatch := slicesConcat(epbs[:5], capturetest.Block{Type: epbs[5].Type, Body: epbs[5].Body, Trailer: 4096}, epbs[6:])
	badTrailer, _ := pcapngFile(t, mismatch...)
	noIface := bytes.Clone(ng)
	binary.LittleEndian.PutUint32(noIface[blk[4]+8:], 3) // interface 3 of 1
	tooLong := bytes.Clone(ng)
	binary.LittleEndian.PutUint32(tooLong[blk[6]+4:], 1<<30)

	for _, tc := range []struct {
		name    string
		data    []byte
		packets int
		offset  int // of the damage; -1: a clean end
		reason  string
	}{
		{"pcap whole", pcap, 6, -1, ""},
		{"pcap cut right after a record header", pcap[:rec[3]+16], 3, rec[3], "after 16 of its 156 bytes"},
		{"pcap cut inside a record header", pcap[:rec[3]+5], 3, rec[3], "cut off in a record header, after 5 of its 16 bytes"},
		{"pcap cut inside a packet", pcap[:rec[5]+30], 5, rec[5], "after 30 of its 156 bytes"},
		{"pcap damage past the read-ahead", big[:last+16], len(bigRec) - 1, last, "after 16 of its"},
		{"pcap captured length over original length", badLen, 4, rec[4], "capture length exceeds original packet length"},
		{"pcapng whole", ng, 6, -1, ""},
		{"pcapng cut 8 bytes into a packet block", ng[:blk[5]+8], 3, blk[5], "cut off after 8 of its"},
		{"pcapng cut inside a packet block", ng[:blk[5]+40], 3, blk[5], "cut off after 40 of its"},
		{"pcapng cut in a trailing length", ng[:len(ng)-2], 5, blk[7], "cut off after"},
		{"pcapng cut 8 bytes into a statistics block", withISB[:len(ng)+8], 6, len(ng), "cut off after 8 of its 32 bytes"},
		{"pcapng cut 8 bytes into a secrets block", withDSB[:len(ng)+8], 6, len(ng), "cut off after 8 of its"},
		{"pcapng cut inside a block header", ng[:blk[6]+5], 4, blk[6], "cut off in its header after 5 bytes"},
		{"pcapng trailing length disagrees", badTrailer, 3, blk[5], "trailing length 4096 disagrees with leading length"},
		{"pcapng packet of a missing interface", noIface, 2, blk[4], "Interface id 3 not present"},
		{"pcapng block length out of range", tooLong, 4, blk[6], "length 1073741824 is out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			packets, _, err := readFile(t, tc.data)
			if packets != tc.packets {
				t.Errorf("%d packets, want %d", packets, tc.packets)
			}
			if tc.offset < 0 {
				if err != nil {
					t.Errorf("error %v, want a clean end", err)
				}
				return
			}
			want := fmt.Sprintf("byte offset %d,", tc.offset)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.reason) {
				t.Errorf("error %v; want it to name %q and %q", err, want, tc.reason)
			}
		})
	}
}

func slicesConcat(parts ...any) []capturetest.Block {
	var out []capturetest.Block
	for _, p := range parts {
		switch v := p.(type) {
		case []capturetest.Block:
			out = append(out, v...)
		case capturetest.Block:
			out = append(out, v)
		}
	}
	return out
}

// TestSecretsBudget: the key logs of secrets blocks are kept up to a
// budget for the whole file (16 MiB); a block past it, or one larger
// than the budget, is skipped unread and the packets after it are read.
func TestSecretsBudget(t *testing.T) {
	const budget = 16 << 20
	pkts := testPackets(3, 100)
	line := capturetest.KeyLogLine(7)
	mib := []byte(strings.Repeat(line, (1<<20-64)/len(line))) // under 1 MiB: a block every reader takes
	huge := []byte(strings.Repeat(line, (17<<20)/len(line)))
	small := []byte(capturetest.KeyLogLine(8))
	head := []capturetest.Block{capturetest.SHB(), capturetest.IDB(layers.LinkTypeRaw)}
	tail := []capturetest.Block{capturetest.EPB(pkts[0]), capturetest.EPB(pkts[1]), capturetest.EPB(pkts[2])}

	var many []capturetest.Block
	for range 20 {
		many = append(many, capturetest.DSB(mib))
	}
	for _, tc := range []struct {
		name     string
		secrets  []capturetest.Block
		minKept  int
		wantKept []byte // exactly these secrets, when set
	}{
		{"20 blocks of 1 MiB", many, budget - len(mib), nil},
		{"one block of 17 MiB, then a small one", []capturetest.Block{capturetest.DSB(huge), capturetest.DSB(small)}, 0, small},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := pcapngFile(t, slicesConcat(head, tc.secrets, tail)...)
			packets, secrets, err := readFile(t, data)
			if err != nil || packets != 3 {
				t.Fatalf("%d packets, error %v; want the 3 packets after the secrets", packets, err)
			}
			if len(secrets) > budget || len(secrets) < tc.minKept {
				t.Errorf("%d bytes of secrets kept, want between %d and the budget %d", len(secrets), tc.minKept, budget)
			}
			if tc.wantKept != nil && !bytes.Equal(secrets, tc.wantKept) {
				t.Errorf("kept %d bytes of secrets, want the small block's %d", len(secrets), len(tc.wantKept))
			}
		})
	}
}

// TestOptionsPcapgoTrusts: options and records pcapgo reads at fixed
// sizes whatever their length (a 1-byte epb_flags or if_recv is an index
// out of range: a panic), or up to a NUL however far (a name resolution
// record), are never handed to it; the packets around them are read.
func TestOptionsPcapgoTrusts(t *testing.T) {
	pkts := testPackets(3, 100)
	option := func(code uint16, value []byte) []byte {
		b := binary.LittleEndian.AppendUint16(nil, code)
		b = binary.LittleEndian.AppendUint16(b, uint16(len(value)))
		b = append(b, value...)
		for len(b)%4 != 0 {
			b = append(b, 0)
		}
		return b
	}
	epbFlags := capturetest.EPB(pkts[1])
	epbFlags.Body = append(epbFlags.Body, make([]byte, (4-len(pkts[1].Data)%4)%4)...)
	epbFlags.Body = append(append(epbFlags.Body, option(2, []byte{1})...), 0, 0, 0, 0)
	isb := capturetest.Block{Type: 5, Body: append(make([]byte, 12), option(4, []byte{1})...)}
	nrb := capturetest.Block{Type: 4, Body: append([]byte{1, 0, 8, 0, 10, 0, 0, 1}, "host"...)} // an IPv4 record whose name has no NUL
	for _, tc := range []struct {
		name  string
		block capturetest.Block
	}{
		{"a 1-byte epb_flags option", epbFlags},
		{"a 1-byte if_recv statistics option", isb},
		{"a name record without its NUL", nrb},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, _ := pcapngFile(t, capturetest.SHB(), capturetest.IDB(layers.LinkTypeRaw),
				capturetest.EPB(pkts[0]), tc.block, capturetest.EPB(pkts[2]))
			packets, _, err := readFile(t, data)
			want := 2
			if tc.block.Type == capturetest.BlockEPB {
				want = 3
			}
			if packets != want || err != nil {
				t.Errorf("%d packets, error %v; want %d and a clean end", packets, err, want)
			}
		})
	}
}
