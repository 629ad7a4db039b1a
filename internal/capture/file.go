package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"

	"github.com/kscope-dev/kscope/internal/output"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// MaxPacketBytes bounds the size of one captured packet. Real snap lengths
// are at most 256 KiB (tcpdump's default is 262144); a larger claim in a
// file is treated as corruption instead of being allocated.
const MaxPacketBytes = 1 << 20

// Format is the container format of a capture file.
type Format string

const (
	FormatPcap   Format = "pcap"
	FormatPcapNG Format = "pcapng"
)

// ErrNotCapture is returned by OpenFile for a file that is neither pcap nor
// pcapng.
var ErrNotCapture = errors.New("not a pcap or pcapng file")

// DamageError is a damaged capture file: where the record or block that
// could not be read starts, and why. Reading stops there.
type DamageError struct {
	Path    string
	Offset  int64 // byte offset in the file of the damaged record or block
	Packets int64 // packets read before it
	Reason  string
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("%s: damaged at byte offset %d, after packet %d: %s", output.Escape(e.Path), e.Offset, e.Packets, e.Reason)
}

// packetReader is what pcapgo's two readers have in common.
type packetReader interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// File reads packets from one capture file.
type File struct {
	Path   string
	Format Format
	Size   int64 // file size in bytes, for progress; -1 for a pipe

	in *safefile.Input
	r  packetReader
	// consumed is the file offset of the first byte the packet reader
	// has not parsed yet (it does not count what buffering read ahead).
	consumed func() int64
	guard    *ngGuard // pcapng only
	link     layers.LinkType
	packets  int64
	// unsupported counts packets by link type the decoder cannot read.
	unsupported linkCounts
}

// OpenFile opens a pcap or pcapng file, choosing the reader by magic
// number. The file may be a pipe (/dev/stdin, a process substitution, a
// FIFO), read once from its start; a directory, a device or a socket is
// refused with an error wrapping safefile.ErrNotRegular, and a FIFO with
// no writer is an error, not a wait.
func OpenFile(path string) (*File, error) {
	in, err := safefile.Open(path, safefile.Stream)
	if err != nil {
		return nil, fmt.Errorf("capture: %w", err)
	}
	cf, err := newFile(path, in)
	if err != nil {
		in.Close()
		return nil, err
	}
	cf.in, cf.Size = in, in.Size()
	return cf, nil
}

func newFile(path string, r io.Reader) (*File, error) {
	counter := &countingReader{r: r}
	br := bufio.NewReaderSize(counter, 1<<20)
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w (%d bytes: shorter than a header; a pipe with no writer reads as empty)", path, ErrNotCapture, len(magic))
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cf := &File{Path: path}
	switch binary.LittleEndian.Uint32(magic) {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		err = cf.openPcap(br, counter)
	case ngSHB:
		err = cf.openPcapNG(br)
	default:
		err = fmt.Errorf("%w (magic %#08x)", ErrNotCapture, binary.BigEndian.Uint32(magic))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cf, nil
}

// openPcap reads a pcap file header. pcapgo reads from br itself (a
// bufio.Reader large enough is not wrapped again), so what it has parsed
// is what was read minus what br holds.
func (cf *File) openPcap(br *bufio.Reader, counter *countingReader) error {
	r, err := pcapgo.NewReader(br)
	if err != nil {
		return fmt.Errorf("pcap header: %w", err)
	}
	// The reader allocates its packet buffer from the header's snap
	// length; never trust it beyond MaxPacketBytes.
	if s := r.Snaplen(); s == 0 || s > MaxPacketBytes {
		r.SetSnaplen(MaxPacketBytes)
	}
	cf.Format, cf.r, cf.link = FormatPcap, r, r.LinkType()
	cf.consumed = func() int64 { return counter.n - int64(br.Buffered()) }
	return nil
}

// openPcapNG reads a pcapng section header through the guard, which
// checks every block before pcapgo sizes anything from it. pcapgo reads
// the guard through ngBuf (4096 bytes: pcapgo does not wrap it again).
func (cf *File) openPcapNG(br *bufio.Reader) error {
	guard := &ngGuard{r: br, secrets: secretsKeeper{limit: MaxSecretsBytes}}
	ngBuf := bufio.NewReaderSize(guard, 4096)
	r, err := pcapgo.NewNgReader(ngBuf, pcapgo.NgReaderOptions{WantMixedLinkType: true})
	if err != nil {
		return fmt.Errorf("pcapng header: %w", err)
	}
	cf.Format, cf.r, cf.guard, cf.link = FormatPcapNG, r, guard, r.LinkType()
	cf.consumed = func() int64 { return guard.out - int64(ngBuf.Buffered()) }
	return nil
}

// Secrets returns the TLS key log lines (NSS format) of the pcapng
// Decryption Secrets Blocks read since the last call, or nil. Blocks are
// read ahead of the packets Next returns, so secrets come no later than
// the packets after them. What is kept is bounded by MaxSecretsBytes (or
// LimitSecrets); SecretsStats counts what was skipped.
func (cf *File) Secrets() []byte {
	if cf.guard == nil {
		return nil
	}
	return cf.guard.secrets.take()
}

// LimitSecrets sets how many bytes of key log this file's secrets blocks
// may still add (MaxSecretsBytes by default): a caller reading several
// files as one capture shares one budget.
func (cf *File) LimitSecrets(n int64) {
	if cf.guard != nil {
		cf.guard.secrets.limit = n
	}
}

// SecretsStats counts the secrets blocks read so far.
func (cf *File) SecretsStats() SecretsStats {
	if cf.guard == nil {
		return SecretsStats{}
	}
	return cf.guard.secrets.stats
}

// Close closes the file.
func (cf *File) Close() error { return cf.in.Close() }

// Offset returns the byte offset in the file up to which packets have
// been read: exact (read-ahead buffering is not counted).
func (cf *File) Offset() int64 { return cf.consumed() }

// Packets returns the number of packets read so far.
func (cf *File) Packets() int64 { return cf.packets }

// Next returns the next packet's bytes and capture info, and its link type.
// The bytes are valid until the next call. It returns io.EOF at a clean
// end, and a *DamageError for a damaged or truncated file.
func (cf *File) Next() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	start := cf.consumed()
	data, ci, err := cf.r.ZeroCopyReadPacketData()
	if err != nil {
		return nil, ci, 0, cf.damage(start, ci, err)
	}
	cf.packets++
	link := cf.link
	if cf.guard != nil && len(ci.AncillaryData) > 0 {
		if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok {
			link = lt
		}
	}
	if !linkSupported(link) {
		cf.unsupported.add(link)
	}
	return data, ci, link, nil
}

// damage turns a reader's error for the record or block at file offset
// start into io.EOF (a clean end) or a *DamageError at the true offset of
// the damage.
func (cf *File) damage(start int64, ci gopacket.CaptureInfo, err error) error {
	d := &DamageError{Path: cf.Path, Offset: start, Packets: cf.packets}
	var ng *ngDamage
	switch {
	case errors.As(err, &ng):
		d.Offset, d.Reason = ng.offset, ng.reason
	case cf.guard != nil:
		// pcapgo's own error: it names no position, but the guard knows
		// which block holds the byte pcapgo stopped at.
		if err == io.EOF {
			return io.EOF // the guard ends a file only between blocks
		}
		if b, ok := cf.guard.starts.at(cf.consumed()); ok {
			d.Offset = b.start
		}
		d.Reason = fmt.Sprintf("block type %#x: %v", cf.blockType(d.Offset), err)
	case errors.Is(err, io.EOF) && cf.consumed() == start:
		return io.EOF
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		d.Reason = truncatedRecord(cf.consumed()-start, ci)
	default:
		d.Reason = "record: " + err.Error()
	}
	return d
}

// blockType is the type of the pcapng block at offset, for messages.
func (cf *File) blockType(offset int64) uint32 {
	if b, ok := cf.guard.starts.at(offset); ok && b.start == offset {
		return b.typ
	}
	return 0
}

// truncatedRecord says how much of a pcap record a file that ends inside
// it holds.
func truncatedRecord(got int64, ci gopacket.CaptureInfo) string {
	const header = 16
	if got < header {
		return fmt.Sprintf("cut off in a record header, after %d of its %d bytes", got, header)
	}
	return fmt.Sprintf("record cut off after %d of its %d bytes (a %d-byte header and %d of packet)", got, header+ci.CaptureLength, header, ci.CaptureLength)
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
