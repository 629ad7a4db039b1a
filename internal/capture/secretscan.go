package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/kscope-dev/kscope/internal/safefile"
)

// SecretsBlock is the TLS key log (NSS lines, ending in a newline) of one
// pcapng Decryption Secrets Block, and the byte offset of the block in
// its file.
type SecretsBlock struct {
	Offset int64
	KeyLog []byte
}

// ErrSecretsLimit is wrapped by ReadSecrets' error for a file whose TLS
// secrets are more than the limit it was given.
var ErrSecretsLimit = errors.New("TLS secrets over the limit")

// ReadSecrets returns the TLS key logs of the Decryption Secrets Blocks
// of the pcapng file at path, wherever they are in it, without reading
// its packets: secrets written after the packets they are for (a capture
// whose writer added them as it went) are then known before those
// packets are decoded. Only a regular file is read (the other blocks are
// skipped over); a file that is not pcapng has no secrets.
//
// At most limit bytes of secrets are returned: the blocks past it are
// left, with an error wrapping ErrSecretsLimit. A damaged file's blocks
// are returned up to the damage, with an error naming its offset.
func ReadSecrets(path string, limit int64) ([]SecretsBlock, error) {
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	sc := &secretsScan{file: io.NewSectionReader(in.File(), 0, in.Size()), limit: limit}
	sc.r = bufio.NewReaderSize(sc.file, 256<<10)
	blocks, err := sc.scan()
	if err != nil {
		return blocks, fmt.Errorf("%s: %w", path, err)
	}
	return blocks, nil
}

// secretsScan walks a pcapng file block by block.
type secretsScan struct {
	file  *io.SectionReader
	r     *bufio.Reader
	pos   int64 // offset of the next byte of r
	order binary.ByteOrder
	limit int64 // secrets bytes still allowed
}

func (sc *secretsScan) scan() ([]SecretsBlock, error) {
	var blocks []SecretsBlock
	for first := true; ; first = false {
		start := sc.pos
		h, err := sc.header(first)
		if errors.Is(err, io.EOF) {
			return blocks, nil
		}
		if err != nil {
			return blocks, err
		}
		if h.typ != ngDSB {
			if err := sc.skip(h.length - 12); err != nil {
				return blocks, fmt.Errorf("pcapng block at byte offset %d: %w", start, err)
			}
			continue
		}
		b, err := sc.secrets(start, h)
		if err != nil {
			return blocks, err
		}
		if len(b) > 0 {
			blocks = append(blocks, SecretsBlock{Offset: start, KeyLog: b})
		}
	}
}

// blockHeader is a block's type and length, and the 4 bytes after them:
// a section header's byte-order magic, a secrets block's secrets type.
type blockHeader struct {
	typ    uint32
	length int64
	next   uint32
}

// header reads a block's header and checks its length against the
// file's size. It returns io.EOF at the end of the file, and for a file
// whose first block is not a section header (not pcapng: no secrets).
func (sc *secretsScan) header(first bool) (blockHeader, error) {
	start := sc.pos
	var h [12]byte
	if err := sc.read(h[:]); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) && !first {
			return blockHeader{}, fmt.Errorf("pcapng block at byte offset %d: truncated", start)
		}
		return blockHeader{}, io.EOF
	}
	if binary.LittleEndian.Uint32(h[0:4]) == ngSHB {
		switch {
		case binary.LittleEndian.Uint32(h[8:12]) == ngByteMagic:
			sc.order = binary.LittleEndian
		case binary.BigEndian.Uint32(h[8:12]) == ngByteMagic:
			sc.order = binary.BigEndian
		default:
			return blockHeader{}, fmt.Errorf("pcapng section at byte offset %d: bad byte-order magic", start)
		}
	} else if first {
		return blockHeader{}, io.EOF
	}
	bh := blockHeader{typ: sc.order.Uint32(h[0:4]), length: int64(sc.order.Uint32(h[4:8])), next: sc.order.Uint32(h[8:12])}
	if bh.length < 12 || bh.length%4 != 0 || start+bh.length > sc.file.Size() {
		return blockHeader{}, fmt.Errorf("pcapng block at byte offset %d: length %d is out of range", start, bh.length)
	}
	return bh, nil
}

// secrets reads the rest of a Decryption Secrets Block whose header was
// read: its TLS key log, or nil for secrets of another kind.
func (sc *secretsScan) secrets(start int64, h blockHeader) ([]byte, error) {
	if h.length < 20 {
		return nil, fmt.Errorf("pcapng decryption secrets block at byte offset %d: length %d is too short", start, h.length)
	}
	var lenField [4]byte
	if err := sc.read(lenField[:]); err != nil {
		return nil, fmt.Errorf("pcapng decryption secrets block at byte offset %d: truncated", start)
	}
	rest := h.length - 16 // the secrets, their padding, options, the length again
	n := int64(sc.order.Uint32(lenField[:]))
	if n > rest-4 {
		return nil, fmt.Errorf("pcapng decryption secrets block at byte offset %d: secrets length %d exceeds block length %d", start, n, h.length)
	}
	if h.next != SecretsTLSKeyLog {
		return nil, sc.skip(rest)
	}
	if n+1 > sc.limit {
		return nil, fmt.Errorf("pcapng decryption secrets block at byte offset %d: %w (%d bytes)", start, ErrSecretsLimit, n)
	}
	b := make([]byte, n, n+1)
	if err := sc.read(b); err != nil {
		return nil, fmt.Errorf("pcapng decryption secrets block at byte offset %d: truncated", start)
	}
	if err := sc.skip(rest - n); err != nil {
		return nil, fmt.Errorf("pcapng decryption secrets block at byte offset %d: %w", start, err)
	}
	if n > 0 && b[n-1] != '\n' {
		b = append(b, '\n') // as File.Secrets does: the next block's first line is its own
	}
	sc.limit -= int64(len(b))
	return b, nil
}

// read reads exactly len(p) bytes.
func (sc *secretsScan) read(p []byte) error {
	n, err := io.ReadFull(sc.r, p)
	sc.pos += int64(n)
	return err
}

// skip moves n bytes on: through the buffer when they are in it, by a
// seek when not (a large packet).
func (sc *secretsScan) skip(n int64) error {
	if n <= int64(sc.r.Buffered()) {
		m, err := sc.r.Discard(int(n))
		sc.pos += int64(m)
		return err
	}
	if sc.pos+n > sc.file.Size() {
		return io.ErrUnexpectedEOF
	}
	sc.pos += n
	if _, err := sc.file.Seek(sc.pos, io.SeekStart); err != nil {
		return err
	}
	sc.r.Reset(sc.file)
	return nil
}
