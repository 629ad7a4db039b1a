package capturetest

import (
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/gopacket/gopacket/layers"
)

// pcapng block types written here (little-endian files).
const (
	BlockSHB = 0x0a0d0d0a
	BlockIDB = 0x00000001
	BlockEPB = 0x00000006
	BlockDSB = 0x0000000a
	// SecretsTLSKeyLog is a Decryption Secrets Block's type for an NSS
	// key log.
	SecretsTLSKeyLog = 0x544c534b
)

// Block is one pcapng block: type, leading length, body (padded to 4
// bytes), trailing length. Lengths are computed unless a test sets them.
type Block struct {
	Type uint32
	Body []byte
	// Length and Trailer override the lengths written (0: computed),
	// for damaged files.
	Length, Trailer uint32
}

// Bytes encodes the block, little-endian.
func (b Block) Bytes() []byte {
	body := append([]byte(nil), b.Body...)
	for len(body)%4 != 0 {
		body = append(body, 0)
	}
	total := uint32(12 + len(body))
	lead, trail := total, total
	if b.Length != 0 {
		lead = b.Length
	}
	if b.Trailer != 0 {
		trail = b.Trailer
	}
	out := binary.LittleEndian.AppendUint32(nil, b.Type)
	out = binary.LittleEndian.AppendUint32(out, lead)
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, trail)
}

// SHB is a section header block (version 1.0, section length unknown).
func SHB() Block {
	body := binary.LittleEndian.AppendUint32(nil, 0x1a2b3c4d)
	body = binary.LittleEndian.AppendUint16(body, 1)
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = binary.LittleEndian.AppendUint64(body, ^uint64(0))
	return Block{Type: BlockSHB, Body: body}
}

// IDB is an interface description block for link, with nanosecond
// timestamps.
func IDB(link layers.LinkType) Block {
	body := binary.LittleEndian.AppendUint16(nil, uint16(link))
	body = binary.LittleEndian.AppendUint16(body, 0)
	body = binary.LittleEndian.AppendUint32(body, 0) // snap length: none
	// if_tsresol = 9 (nanoseconds), then the end of options.
	body = append(body, 9, 0, 1, 0, 9, 0, 0, 0, 0, 0, 0, 0)
	return Block{Type: BlockIDB, Body: body}
}

// EPB is an enhanced packet block of interface 0.
func EPB(p Packet) Block {
	ns := uint64(p.CI.Timestamp.UnixNano())
	body := binary.LittleEndian.AppendUint32(nil, 0)
	body = binary.LittleEndian.AppendUint32(body, uint32(ns>>32))
	body = binary.LittleEndian.AppendUint32(body, uint32(ns))
	body = binary.LittleEndian.AppendUint32(body, uint32(len(p.Data)))
	body = binary.LittleEndian.AppendUint32(body, uint32(len(p.Data)))
	body = append(body, p.Data...)
	return Block{Type: BlockEPB, Body: body}
}

// DSB is a decryption secrets block holding an NSS key log.
func DSB(keyLog []byte) Block {
	body := binary.LittleEndian.AppendUint32(nil, SecretsTLSKeyLog)
	body = binary.LittleEndian.AppendUint32(body, uint32(len(keyLog)))
	return Block{Type: BlockDSB, Body: append(body, keyLog...)}
}

// WriteBlocks writes blocks in order.
func WriteBlocks(w io.Writer, blocks ...Block) error {
	for _, b := range blocks {
		if _, err := w.Write(b.Bytes()); err != nil {
			return fmt.Errorf("capturetest: pcapng block: %w", err)
		}
	}
	return nil
}

// KeyLogLine is a distinct TLS 1.2 key log line for session i (the client
// random and master secret are made from i).
func KeyLogLine(i int) string {
	random := fmt.Sprintf("%064x", i)
	return "CLIENT_RANDOM " + random + " " + strings.Repeat("ab", 48) + "\n"
}

// SecretsBlocks writes a pcapng of blocks decryption secrets blocks of
// lines distinct key log lines each, then one packet: what kscope keeps
// of a capture's secrets is what this measures.
func SecretsBlocks(w io.Writer, blocks, lines int) error {
	if err := WriteBlocks(w, SHB(), IDB(layers.LinkTypeRaw)); err != nil {
		return err
	}
	var keyLog []byte
	for i := range blocks {
		keyLog = keyLog[:0]
		for j := range lines {
			keyLog = append(keyLog, KeyLogLine(i*lines+j)...)
		}
		if err := WriteBlocks(w, DSB(keyLog)); err != nil {
			return err
		}
	}
	c := NewConn(ClientAddr(0), Broker)
	return WriteBlocks(w, EPB(c.Handshake()[0]))
}
