package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
)

// ngGuard sits between a pcapng file and pcapgo's NgReader and checks each
// block's lengths as the bytes pass through. pcapgo allocates a packet
// buffer from an Enhanced Packet Block's captured length without checking
// it against the block length, so a damaged or hostile file could make it
// allocate gigabytes; the guard turns that into an error first.
type ngGuard struct {
	r         io.Reader
	bigEndian bool
	// remaining bytes of the current block not yet passed through
	remaining int64
	hdr       [28]byte
	hdrLen    int // bytes buffered in hdr, to be handed out before more reads
	hdrOff    int
	pos       int64
	// secrets are the TLS key logs of the Decryption Secrets Blocks
	// read since File.Secrets last took them. The guard consumes those
	// blocks: pcapgo never sees them.
	secrets []byte
	// block is an interface block read whole to be checked, handed out
	// after hdr.
	block    []byte
	blockOff int
}

const (
	ngMaxBlock = MaxPacketBytes + 64*1024
	ngSHB      = 0x0a0d0d0a
	ngEPB      = 0x00000006
	ngDSB      = 0x0000000a
	ngIDB      = 0x00000001
	// SecretsTLSKeyLog is a Decryption Secrets Block's secrets type for
	// an NSS key log ("TLSK").
	SecretsTLSKeyLog = 0x544c534b
	ngByteMagic      = 0x1a2b3c4d
	ngHeaderPeek     = 28 // type, length, and an EPB's fields up to the captured length
)

func (g *ngGuard) Read(p []byte) (int, error) {
	if g.hdrOff < g.hdrLen {
		n := copy(p, g.hdr[g.hdrOff:g.hdrLen])
		g.hdrOff += n
		return n, nil
	}
	if g.blockOff < len(g.block) {
		n := copy(p, g.block[g.blockOff:])
		g.blockOff += n
		return n, nil
	}
	if g.remaining == 0 {
		if err := g.nextBlock(); err != nil {
			g.hdrLen, g.hdrOff = 0, 0
			return 0, err
		}
		return g.Read(p)
	}
	if int64(len(p)) > g.remaining {
		p = p[:g.remaining]
	}
	n, err := g.r.Read(p)
	g.remaining -= int64(n)
	g.pos += int64(n)
	return n, err
}

// nextBlock reads the next block's first bytes into hdr and validates them.
func (g *ngGuard) nextBlock() error {
	g.hdrLen, g.hdrOff = 0, 0
	n, err := io.ReadFull(g.r, g.hdr[:8])
	g.hdrLen = n
	if err != nil {
		if err == io.ErrUnexpectedEOF {
			return io.ErrUnexpectedEOF
		}
		return err
	}
	typ := binary.LittleEndian.Uint32(g.hdr[0:4])
	if typ == ngSHB {
		m, err := io.ReadFull(g.r, g.hdr[8:12])
		g.hdrLen += m
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		switch {
		case binary.BigEndian.Uint32(g.hdr[8:12]) == ngByteMagic:
			g.bigEndian = true
		case binary.LittleEndian.Uint32(g.hdr[8:12]) == ngByteMagic:
			g.bigEndian = false
		default:
			return nil // let pcapgo report the bad byte-order magic
		}
	}
	order := g.order()
	typ = order.Uint32(g.hdr[0:4])
	length := int64(order.Uint32(g.hdr[4:8]))
	blockStart := g.pos
	if length < 12 || length > ngMaxBlock || length%4 != 0 {
		g.hdrLen = 0
		return fmt.Errorf("pcapng block at byte offset %d: length %d is out of range", blockStart, length)
	}
	if typ == ngDSB {
		if err := g.decryptionSecrets(length, order); err != nil {
			return err
		}
		return g.nextBlock()
	}
	if typ == ngIDB {
		return g.interfaceBlock(length, order)
	}
	if typ == ngEPB {
		if length < 32 {
			g.hdrLen = 0
			return fmt.Errorf("pcapng packet block at byte offset %d: length %d is too short", blockStart, length)
		}
		m, err := io.ReadFull(g.r, g.hdr[8:ngHeaderPeek])
		g.hdrLen += m
		if err != nil {
			return io.ErrUnexpectedEOF
		}
		capLen := int64(order.Uint32(g.hdr[20:24]))
		if capLen > length-32 {
			g.hdrLen = 0
			return fmt.Errorf("pcapng packet block at byte offset %d: captured length %d exceeds block length %d", blockStart, capLen, length)
		}
	}
	g.pos += int64(g.hdrLen)
	g.remaining = length - int64(g.hdrLen)
	return nil
}

func (g *ngGuard) order() binary.ByteOrder {
	if g.bigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// decryptionSecrets reads a Decryption Secrets Block (its type and length
// are in hdr) and keeps its TLS key log: secrets type, secrets length,
// the secrets padded to 4 bytes, options, and the length again.
func (g *ngGuard) decryptionSecrets(length int64, order binary.ByteOrder) error {
	start := g.pos
	b, err := g.readBlock(length)
	if err != nil {
		return err
	}
	g.hdrLen = 0 // the block is not handed on
	if len(b) < 12 {
		return fmt.Errorf("pcapng decryption secrets block at byte offset %d: length %d is too short", start, length)
	}
	kind, n := order.Uint32(b[0:4]), int64(order.Uint32(b[4:8]))
	if n > int64(len(b))-12 {
		return fmt.Errorf("pcapng decryption secrets block at byte offset %d: secrets length %d exceeds block length %d", start, n, length)
	}
	if kind == SecretsTLSKeyLog {
		g.secrets = append(g.secrets, b[8:8+n]...)
		if len(g.secrets) > 0 && g.secrets[len(g.secrets)-1] != '\n' {
			g.secrets = append(g.secrets, '\n')
		}
	}
	return nil
}

// interfaceBlock reads an Interface Description Block whole (its length is
// checked) and checks the options pcapgo trusts: the timestamp resolution,
// which it turns into a divisor (a binary exponent of 64 or more makes it
// 0, a division by zero; a decimal one of 20 or more overflows), and the
// sizes of the resolution and offset options. The block is then handed to
// pcapgo as it was.
func (g *ngGuard) interfaceBlock(length int64, order binary.ByteOrder) error {
	start := g.pos
	b, err := g.readBlock(length)
	if err != nil {
		return err
	}
	g.block, g.blockOff = b, 0
	g.remaining = 0
	if len(b) < 12 {
		return fmt.Errorf("pcapng interface block at byte offset %d: length %d is too short", start, length)
	}
	opts := b[8 : len(b)-4]
	for len(opts) >= 4 {
		code, n := order.Uint16(opts[0:2]), int(order.Uint16(opts[2:4]))
		if code == 0 || 4+n > len(opts) {
			break
		}
		// pcapgo reads these options' values at fixed sizes, and keeps
		// the previous option's value for one of length 0.
		switch {
		case code == 9 && n != 1, code == 14 && n != 8, code == 11 && n < 1: // if_tsresol, if_tsoffset, if_filter
			return fmt.Errorf("pcapng interface block at byte offset %d: option %d of %d bytes", start, code, n)
		case code == 9:
			v := opts[4]
			if v&0x80 != 0 && v&0x7f > 63 || v&0x80 == 0 && v > 19 {
				return fmt.Errorf("pcapng interface block at byte offset %d: timestamp resolution %#x is out of range", start, v)
			}
		}
		opts = opts[min(len(opts), 4+(n+3)&^3):]
	}
	return nil
}

// readBlock reads the rest of a block whose 8-byte header is in hdr (its
// length checked by nextBlock) into a buffer that grows with the bytes
// that really come.
func (g *ngGuard) readBlock(length int64) ([]byte, error) {
	var body bytes.Buffer
	if _, err := io.CopyN(&body, g.r, length-8); err != nil {
		return nil, io.ErrUnexpectedEOF
	}
	g.pos += length
	return body.Bytes(), nil
}
