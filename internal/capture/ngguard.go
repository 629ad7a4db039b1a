package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// ngGuard sits between a pcapng file and pcapgo's NgReader and checks each
// block as its bytes pass through:
//   - its leading length, against the block type's minimum and the bound
//     on what a block may make pcapgo allocate;
//   - its trailing length, against the leading one, before the block's
//     last bytes are handed on: pcapgo never finishes a block whose two
//     lengths disagree;
//   - the captured length of packet blocks (pcapgo sizes a buffer from it
//     unchecked) and the interface options pcapgo trusts;
//   - that pcapgo never reads an option or record it would index past:
//     packet block options are blanked (kscope uses none), statistics and
//     name resolution blocks are handed on as a custom block pcapgo skips;
//   - that it is complete: a file that ends inside a block is damage at
//     the block's start, never the clean end pcapgo would take it for when
//     it ends right after a block's header.
//
// Every byte is handed on in order (pcapgo skips the block types it does
// not know), so the bytes handed out are the file offset of the next one.
// Decryption Secrets Blocks' key logs are kept, within a budget.
type ngGuard struct {
	r         io.Reader
	bigEndian bool
	out       int64 // bytes handed out: the file offset of the next one
	// pend are bytes of the current block read to be checked, handed out
	// before anything more is read.
	pend    []byte
	pendOff int
	hdr     [ngHeaderPeek]byte
	whole   bytes.Buffer // a block read whole to be checked
	// remaining bytes of the current block to pass through unread,
	// before its tail: tail bytes (packet options, and the trailing
	// length) read whole to be checked.
	remaining int64
	tail      int64
	tailBuf   [64]byte // a tail that fits: most are the 4-byte trailing length alone
	block     ngBlock
	// snapLen is the first interface's snap length in this section: it
	// caps the captured length of a Simple Packet Block.
	snapLen uint32
	starts  blockRing
	err     error // sticky: once damaged, every read fails the same way
	secrets secretsKeeper
}

// ngBlock is the block being passed through.
type ngBlock struct {
	start  int64
	typ    uint32
	length int64
}

const (
	ngMaxBlock = MaxPacketBytes + 64*1024
	ngSHB      = 0x0a0d0d0a
	ngIDB      = 0x00000001
	ngPB       = 0x00000002
	ngSPB      = 0x00000003
	ngEPB      = 0x00000006
	ngDSB      = 0x0000000a
	ngNRB      = 0x00000004
	ngISB      = 0x00000005
	// ngSkipped is the custom block type blocks pcapgo must not parse
	// are handed on as: pcapgo skips blocks of types it does not know.
	ngSkipped = 0x00000bad
	// SecretsTLSKeyLog is a Decryption Secrets Block's secrets type for
	// an NSS key log ("TLSK").
	SecretsTLSKeyLog = 0x544c534b
	ngByteMagic      = 0x1a2b3c4d
	ngHeaderPeek     = 28 // type, length, and a packet block's fields up to the captured length
)

// ngMinLength is the smallest length of each block type pcapgo reads
// fields of: a shorter one would make pcapgo read past its end.
var ngMinLength = map[uint32]int64{
	ngSHB: 28, ngIDB: 20, ngPB: 32, ngSPB: 16, 4: 16, 5: 24, ngEPB: 32, ngDSB: 20,
}

// ngDamage is a block the guard refuses: where it starts and why.
type ngDamage struct {
	offset int64
	reason string
}

func (e *ngDamage) Error() string {
	return fmt.Sprintf("pcapng block at byte offset %d: %s", e.offset, e.reason)
}

func (g *ngGuard) damage(format string, args ...any) error {
	g.err = &ngDamage{offset: g.block.start, reason: fmt.Sprintf(format, args...)}
	return g.err
}

// Read hands out the next bytes of the current block, starting the next
// block only once the current one is all handed out.
func (g *ngGuard) Read(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	for len(p) > 0 {
		switch {
		case g.pendOff < len(g.pend):
			n := copy(p, g.pend[g.pendOff:])
			g.pendOff += n
			g.out += int64(n)
			return n, nil
		case g.remaining > 0:
			return g.passThrough(p)
		case g.tail > 0:
			if err := g.readTail(); err != nil {
				return 0, err
			}
		default:
			if err := g.nextBlock(); err != nil {
				return 0, err
			}
		}
	}
	return 0, nil
}

// passThrough hands out bytes of the current block straight from the file.
func (g *ngGuard) passThrough(p []byte) (int, error) {
	if int64(len(p)) > g.remaining {
		p = p[:g.remaining]
	}
	n, err := g.r.Read(p)
	g.remaining -= int64(n)
	g.out += int64(n)
	switch {
	case errors.Is(err, io.EOF) && n > 0:
		return n, nil // the block's trailing length is still due: the next read finds it missing
	case errors.Is(err, io.EOF):
		return 0, g.cutOff(g.out - g.block.start)
	case err != nil:
		g.err = err
	}
	return n, err
}

func (g *ngGuard) cutOff(got int64) error {
	return g.damage("cut off after %d of its %d bytes (block type %#x)", got, g.block.length, g.block.typ)
}

// readTail reads the end of the current block (a packet's options, and
// the trailing length), checks it, and queues it to be handed out.
func (g *ngGuard) readTail() error {
	n := g.tail
	g.tail = 0
	b, err := g.readN(n)
	if err != nil {
		return err
	}
	if err := g.checkTrailer(b[len(b)-4:]); err != nil {
		return err
	}
	if g.block.typ == ngEPB {
		// pcapgo reads some packet options at fixed sizes whatever
		// their length (a 1-byte epb_flags is an index out of range),
		// and kscope uses none: all zeros read as the end of options.
		clear(b[:len(b)-4])
	}
	g.pend, g.pendOff = b, 0
	return nil
}

// readN reads the last n bytes of the current block: into tailBuf when
// they fit, else into a buffer that grows with the bytes that come.
func (g *ngGuard) readN(n int64) ([]byte, error) {
	var got int64
	var err error
	if n <= int64(len(g.tailBuf)) {
		var m int
		m, err = io.ReadFull(g.r, g.tailBuf[:n])
		got = int64(m)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = io.EOF
		}
	} else {
		g.whole.Reset()
		got, err = io.CopyN(&g.whole, g.r, n)
	}
	switch {
	case errors.Is(err, io.EOF):
		return nil, g.cutOff(g.block.length - n + got)
	case err != nil:
		g.err = err
		return nil, err
	case n <= int64(len(g.tailBuf)):
		return g.tailBuf[:n], nil
	}
	return g.whole.Bytes(), nil
}

func (g *ngGuard) checkTrailer(t []byte) error {
	if got := int64(g.order().Uint32(t)); got != g.block.length {
		return g.damage("trailing length %d disagrees with leading length %d", got, g.block.length)
	}
	return nil
}

// nextBlock reads the next block's first bytes and checks them; what it
// read is queued to be handed out.
func (g *ngGuard) nextBlock() error {
	g.pend, g.pendOff = nil, 0
	g.block = ngBlock{start: g.out}
	n, err := io.ReadFull(g.r, g.hdr[:8])
	if err != nil {
		if errors.Is(err, io.EOF) {
			g.err = io.EOF
			return io.EOF // the one place a file may end
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return g.damage("cut off in its header after %d bytes", n)
		}
		g.err = err
		return err
	}
	if binary.LittleEndian.Uint32(g.hdr[0:4]) == ngSHB {
		if err := g.sectionByteOrder(); err != nil {
			return err
		}
		n = 12
	}
	order := g.order()
	g.block.typ, g.block.length = order.Uint32(g.hdr[0:4]), int64(order.Uint32(g.hdr[4:8]))
	g.starts.push(g.block)
	if err := g.checkLength(); err != nil {
		return err
	}
	switch g.block.typ {
	case ngDSB:
		return g.decryptionSecrets()
	case ngIDB:
		return g.interfaceBlock()
	case ngEPB, ngPB:
		return g.packetBlock()
	case ngSPB:
		return g.simplePacketBlock()
	case ngNRB, ngISB:
		return g.unparsedBlock()
	}
	g.passRest(n, 4)
	return nil
}

// sectionByteOrder reads a section header's byte-order magic.
func (g *ngGuard) sectionByteOrder() error {
	if _, err := io.ReadFull(g.r, g.hdr[8:12]); err != nil {
		return g.damage("section header cut off after its first 8 bytes")
	}
	switch {
	case binary.BigEndian.Uint32(g.hdr[8:12]) == ngByteMagic:
		g.bigEndian = true
	case binary.LittleEndian.Uint32(g.hdr[8:12]) == ngByteMagic:
		g.bigEndian = false
	default:
		return g.damage("section header with a bad byte-order magic %#08x", binary.BigEndian.Uint32(g.hdr[8:12]))
	}
	g.snapLen = 0
	return nil
}

// checkLength checks the leading length: a multiple of 4, at least the
// block type's minimum, and at most ngMaxBlock (but for secrets blocks,
// which are skipped when too large, never read whole).
func (g *ngGuard) checkLength() error {
	length, minimum := g.block.length, int64(12)
	if m, ok := ngMinLength[g.block.typ]; ok {
		minimum = m
	}
	if length < minimum || length%4 != 0 || length > ngMaxBlock && g.block.typ != ngDSB {
		return g.damage("length %d is out of range for block type %#x", length, g.block.typ)
	}
	return nil
}

// passRest queues the n bytes read of the current block and passes the
// rest through but its last tail bytes, read whole and checked.
func (g *ngGuard) passRest(n int, tail int64) {
	g.pend, g.pendOff = g.hdr[:n], 0
	g.remaining = g.block.length - int64(n) - tail
	g.tail = tail
}

func (g *ngGuard) order() binary.ByteOrder {
	if g.bigEndian {
		return binary.BigEndian
	}
	return binary.LittleEndian
}

// packetBlock checks an Enhanced (or obsolete) Packet Block's captured
// length against its block length.
func (g *ngGuard) packetBlock() error {
	if _, err := io.ReadFull(g.r, g.hdr[8:ngHeaderPeek]); err != nil {
		return g.cutOff(8)
	}
	capLen := int64(g.order().Uint32(g.hdr[20:24]))
	if capLen > g.block.length-32 {
		return g.damage("captured length %d exceeds block length %d", capLen, g.block.length)
	}
	// The packet passes through; its options (enhanced packet blocks
	// only: pcapgo reads none of an obsolete packet block's) and the
	// trailing length are read whole.
	tail := int64(4)
	if g.block.typ == ngEPB {
		tail = g.block.length - ngHeaderPeek - (capLen+3)&^3
	}
	g.passRest(ngHeaderPeek, tail)
	return nil
}

// simplePacketBlock checks a Simple Packet Block's packet length, capped
// by the interface's snap length as pcapgo caps it, against its block
// length: pcapgo reads that many bytes.
func (g *ngGuard) simplePacketBlock() error {
	if _, err := io.ReadFull(g.r, g.hdr[8:12]); err != nil {
		return g.cutOff(8)
	}
	capLen := int64(g.order().Uint32(g.hdr[8:12]))
	if g.snapLen != 0 {
		capLen = min(capLen, int64(g.snapLen))
	}
	if capLen > g.block.length-16 {
		return g.damage("packet length %d exceeds block length %d", capLen, g.block.length)
	}
	g.passRest(12, 4)
	return nil
}

// unparsedBlock reads a block kscope has no use for but pcapgo would parse
// (interface statistics: options read at fixed sizes whatever their
// length; name resolution: names read up to a NUL however far it is)
// whole, and hands it on as a custom block pcapgo skips.
func (g *ngGuard) unparsedBlock() error {
	b, err := g.readWhole()
	if err != nil {
		return err
	}
	g.order().PutUint32(b[0:4], ngSkipped)
	return nil
}

// readWhole reads the current block whole (its first 8 bytes are in hdr),
// checks its trailing length, and queues it to be handed out. The buffer
// grows with the bytes that really come, not with the length claimed.
func (g *ngGuard) readWhole() ([]byte, error) {
	g.whole.Reset()
	if g.whole.Cap() > ngMaxBlock {
		g.whole = bytes.Buffer{} // a large secrets block is not kept for the file's life
	}
	g.whole.Write(g.hdr[:8])
	if n, err := io.CopyN(&g.whole, g.r, g.block.length-8); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, g.cutOff(8 + n)
		}
		g.err = err
		return nil, err
	}
	b := g.whole.Bytes()
	if err := g.checkTrailer(b[len(b)-4:]); err != nil {
		return nil, err
	}
	g.pend, g.pendOff = b, 0
	return b, nil
}

// decryptionSecrets reads a Decryption Secrets Block and keeps its TLS key
// log (secrets type, secrets length, the secrets padded to 4 bytes,
// options), or passes it through unread when it is over the secrets
// budget.
func (g *ngGuard) decryptionSecrets() error {
	if !g.secrets.fits(g.block.length - 20) {
		g.secrets.skip(g.block)
		g.passRest(8, 4)
		return nil
	}
	b, err := g.readWhole()
	if err != nil {
		return err
	}
	order := g.order()
	kind, n := order.Uint32(b[8:12]), int64(order.Uint32(b[12:16]))
	if n > int64(len(b))-20 {
		return g.damage("secrets length %d exceeds block length %d", n, g.block.length)
	}
	if kind == SecretsTLSKeyLog {
		g.secrets.keep(b[16 : 16+n])
	}
	return nil
}

// interfaceBlock reads an Interface Description Block whole and checks
// the options pcapgo trusts: the timestamp resolution, which it turns
// into a divisor (a binary exponent of 64 or more makes it 0, a division
// by zero; a decimal one of 20 or more overflows), and the sizes of the
// resolution and offset options. The block is then handed to pcapgo as it
// was.
func (g *ngGuard) interfaceBlock() error {
	b, err := g.readWhole()
	if err != nil {
		return err
	}
	if g.snapLen == 0 {
		g.snapLen = g.order().Uint32(b[12:16])
	}
	order := g.order()
	opts := b[16 : len(b)-4]
	for len(opts) >= 4 {
		code, n := order.Uint16(opts[0:2]), int(order.Uint16(opts[2:4]))
		if code == 0 || 4+n > len(opts) {
			break
		}
		// pcapgo reads these options' values at fixed sizes, and keeps
		// the previous option's value for one of length 0.
		switch {
		case code == 9 && n != 1, code == 14 && n != 8, code == 11 && n < 1: // if_tsresol, if_tsoffset, if_filter
			return g.damage("interface option %d of %d bytes", code, n)
		case code == 9:
			v := opts[4]
			if v&0x80 != 0 && v&0x7f > 63 || v&0x80 == 0 && v > 19 {
				return g.damage("interface timestamp resolution %#x is out of range", v)
			}
		}
		opts = opts[min(len(opts), 4+(n+3)&^3):]
	}
	return nil
}

// blockRing remembers where the last blocks handed out start: pcapgo reads
// ahead of what it has parsed by at most its 4096-byte buffer, blocks are
// at least 12 bytes, so the block it failed in is among the last 512.
type blockRing struct {
	blocks [512]ngBlock
	n      int
}

func (r *blockRing) push(b ngBlock) {
	r.blocks[r.n%len(r.blocks)] = b
	r.n++
}

// at returns the block holding file offset off.
func (r *blockRing) at(off int64) (ngBlock, bool) {
	for i := r.n - 1; i >= max(0, r.n-len(r.blocks)); i-- {
		if b := r.blocks[i%len(r.blocks)]; b.start <= off {
			return b, true
		}
	}
	return ngBlock{}, false
}
