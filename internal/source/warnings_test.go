package source

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture/capturetest"
	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/wire"
)

// TestFileWarnings: what a file leaves out is one warning line each,
// naming the file (escaped) and where: packets of a link type kscope does
// not decode, secrets blocks over the budget shared by all the files, a
// file cut off inside a record.
func TestFileWarnings(t *testing.T) {
	dir := t.TempDir()
	c := capturetest.NewConn(capturetest.ClientAddr(1), capturetest.Broker)
	pkts := append(c.Handshake(), c.Send(true, capturetest.RequestHeader(20, 18, 3, 1, "x"), 1448)...)
	var pcap bytes.Buffer
	w, err := capturetest.NewPcapWriter(&pcap, layers.LinkTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(pkts...); err != nil {
		t.Fatal(err)
	}
	user0 := bytes.Clone(pcap.Bytes())
	user0[20] = 147 // the link type in the file header: LINKTYPE_USER0
	line := capturetest.KeyLogLine(1)
	tenMiB := []byte(strings.Repeat(line, (10<<20)/len(line)))
	// secrets is a pcapng of keyLog in secrets blocks of at most
	// blockMax bytes, then two packets.
	secrets := func(keyLog []byte, blockMax int) []byte {
		var b bytes.Buffer
		blocks := []capturetest.Block{capturetest.SHB(), capturetest.IDB(layers.LinkTypeRaw)}
		for len(keyLog) > 0 {
			n := min(len(keyLog), blockMax-blockMax%len(line))
			blocks = append(blocks, capturetest.DSB(keyLog[:n]))
			keyLog = keyLog[n:]
		}
		blocks = append(blocks, capturetest.EPB(pkts[0]), capturetest.EPB(pkts[1]))
		if err := capturetest.WriteBlocks(&b, blocks...); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	const under1MiB = 1<<20 - 1024
	for _, tc := range []struct {
		name    string
		files   map[string][]byte // read in the order of their names
		packets int64
		want    []string // in the warnings, in order
		not     string   // in no warning
	}{
		{"unsupported link type", map[string][]byte{"user0.pcap": user0}, 3,
			[]string{"user0.pcap: 3 packets of link type 147 (USER0"}, ""},
		{"secrets over the budget of all files", map[string][]byte{"a.pcapng": secrets(tenMiB, under1MiB), "b.pcapng": secrets(tenMiB, under1MiB)}, 4,
			[]string{"b.pcapng: ", "decryption secrets blocks", "skipped, the first at byte offset ", "over the 16 MiB budget"}, "a.pcapng"},
		{"one secrets block over 16 MiB", map[string][]byte{"huge.pcapng": secrets(bytes.Repeat(tenMiB, 2), 32<<20)}, 2,
			[]string{"huge.pcapng: 1 decryption secrets blocks (", "skipped, the first at byte offset 60:"}, ""},
		{"cut off inside a record", map[string][]byte{"cut.pcap": pcap.Bytes()[:pcap.Len()-3]}, 2,
			[]string{"cut.pcap: damaged at byte offset ", "record cut off after"}, ""},
		{"a file name to escape", map[string][]byte{"evil\n\x1b[31mname.pcap": pcap.Bytes()[:pcap.Len()-3]}, 2,
			[]string{`evil\x0a\x1b[31mname.pcap: damaged at byte offset`}, "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var paths []string
			for _, name := range slices.Sorted(maps.Keys(tc.files)) {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, tc.files[name], 0o644); err != nil {
					t.Fatal(err)
				}
				paths = append(paths, p)
			}
			res, err := ReadFiles(paths, Options{Wire: wire.DefaultConfig()}, func(*event.Request) {})
			if err != nil {
				t.Fatal(err)
			}
			if res.Capture.Packets != tc.packets {
				t.Errorf("%d packets read, want %d", res.Capture.Packets, tc.packets)
			}
			var all []string
			for _, w := range res.Warnings {
				all = append(all, w.Error())
			}
			joined := strings.Join(all, "|")
			pos := 0
			for _, want := range tc.want {
				i := strings.Index(joined[pos:], want)
				if i < 0 {
					t.Fatalf("warnings %q: want %q (in order)", all, want)
				}
				pos += i + len(want)
			}
			if tc.not != "" && strings.Contains(joined, tc.not) {
				t.Errorf("warnings %q: want none with %q", all, tc.not)
			}
		})
	}
}
