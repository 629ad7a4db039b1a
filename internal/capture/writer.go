package capture

import (
	"encoding/binary"
	"fmt"
	"io"
	"runtime"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// PcapNGWriter writes packets to a pcapng stream with nanosecond
// timestamps and one interface (one link type), for `kscope record
// --pcap`. It buffers: call Flush before closing the underlying writer.
type PcapNGWriter struct {
	w       *pcapgo.NgWriter
	out     io.Writer // under w: blocks pcapgo does not write
	snapLen int
}

// NewPcapNGWriter writes the section and interface headers to w. snapLen
// is recorded in the interface header and packets longer than it are
// truncated; 0 means unlimited.
func NewPcapNGWriter(w io.Writer, link layers.LinkType, snapLen int) (*PcapNGWriter, error) {
	intf := pcapgo.NgInterface{
		Name:                "kscope",
		OS:                  runtime.GOOS,
		LinkType:            link,
		TimestampResolution: 9, // pcapgo always writes nanoseconds
		SnapLength:          uint32(max(snapLen, 0)),
	}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{
		Hardware: runtime.GOARCH, OS: runtime.GOOS, Application: "kscope",
	}}
	nw, err := pcapgo.NewNgWriterInterface(w, intf, opts)
	if err != nil {
		return nil, fmt.Errorf("capture: pcapng header: %w", err)
	}
	return &PcapNGWriter{w: nw, out: w, snapLen: max(snapLen, 0)}, nil
}

// WritePacket writes one packet. Only ci.Timestamp and ci.Length are
// used: the capture length is len(data) (after truncation to the snap
// length), and every packet goes to the one interface, whatever
// ci.InterfaceIndex the capture gave it. data is not kept.
func (pw *PcapNGWriter) WritePacket(ci gopacket.CaptureInfo, data []byte) error {
	if pw.snapLen > 0 && len(data) > pw.snapLen {
		data = data[:pw.snapLen]
	}
	out := gopacket.CaptureInfo{
		Timestamp:     ci.Timestamp,
		CaptureLength: len(data),
		Length:        max(ci.Length, len(data)),
	}
	if err := pw.w.WritePacket(out, data); err != nil {
		return fmt.Errorf("capture: write pcapng packet: %w", err)
	}
	return nil
}

// Flush writes out buffered packets.
func (pw *PcapNGWriter) Flush() error {
	if err := pw.w.Flush(); err != nil {
		return fmt.Errorf("capture: flush pcapng: %w", err)
	}
	return nil
}

// WriteSecrets writes a Decryption Secrets Block holding TLS key log
// lines (NSS format), as Wireshark's editcap --inject-secrets does: the
// capture then carries the keys of the connections in the packets after
// it. keyLog should be whole lines.
func (pw *PcapNGWriter) WriteSecrets(keyLog []byte) error {
	if len(keyLog) == 0 {
		return nil
	}
	if err := pw.w.Flush(); err != nil {
		return fmt.Errorf("capture: flush pcapng: %w", err)
	}
	// pcapgo writes little-endian.
	if err := writeSecretsBlocks(pw.out, binary.LittleEndian, keyLog); err != nil {
		return fmt.Errorf("capture: write pcapng secrets: %w", err)
	}
	return nil
}
