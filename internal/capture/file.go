package capture

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
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

// packetReader is what pcapgo's two readers have in common.
type packetReader interface {
	ZeroCopyReadPacketData() ([]byte, gopacket.CaptureInfo, error)
}

// File reads packets from one capture file.
type File struct {
	Path   string
	Format Format
	Size   int64 // file size in bytes, for progress

	f       *os.File
	counter *countingReader
	r       packetReader
	ng      *pcapgo.NgReader
	guard   *ngGuard
	link    layers.LinkType
	packets int64
}

// OpenFile opens a pcap or pcapng file, choosing the reader by magic number.
func OpenFile(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	cf, err := newFile(path, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	if st, err := f.Stat(); err == nil {
		cf.Size = st.Size()
	}
	return cf, nil
}

func newFile(path string, f *os.File) (*File, error) {
	counter := &countingReader{r: f}
	br := bufio.NewReaderSize(counter, 1<<20)
	magic, err := br.Peek(4)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: %w (file is shorter than a header)", path, ErrNotCapture)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	cf := &File{Path: path, f: f, counter: counter}
	switch binary.LittleEndian.Uint32(magic) {
	case 0xa1b2c3d4, 0xd4c3b2a1, 0xa1b23c4d, 0x4d3cb2a1:
		r, err := pcapgo.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: pcap header: %w", path, err)
		}
		// The reader allocates its packet buffer from the header's snap
		// length; never trust it beyond MaxPacketBytes.
		if s := r.Snaplen(); s == 0 || s > MaxPacketBytes {
			r.SetSnaplen(MaxPacketBytes)
		}
		cf.Format, cf.r, cf.link = FormatPcap, r, r.LinkType()
	case 0x0a0d0d0a:
		// The guard checks every block's lengths before pcapgo sizes a
		// buffer from them.
		guard := &ngGuard{r: br}
		r, err := pcapgo.NewNgReader(guard, pcapgo.NgReaderOptions{WantMixedLinkType: true})
		if err != nil {
			return nil, fmt.Errorf("%s: pcapng header: %w", path, err)
		}
		cf.Format, cf.r, cf.ng, cf.guard, cf.link = FormatPcapNG, r, r, guard, r.LinkType()
	default:
		return nil, fmt.Errorf("%s: %w (magic %#08x)", path, ErrNotCapture, binary.BigEndian.Uint32(magic))
	}
	return cf, nil
}

// Secrets returns the TLS key log lines (NSS format) of the pcapng
// Decryption Secrets Blocks read since the last call, or nil. Blocks are
// read ahead of the packets Next returns, so secrets come no later than
// the packets after them.
func (cf *File) Secrets() []byte {
	if cf.guard == nil || len(cf.guard.secrets) == 0 {
		return nil
	}
	s := cf.guard.secrets
	cf.guard.secrets = nil
	return s
}

// Close closes the file.
func (cf *File) Close() error { return cf.f.Close() }

// Offset returns how many bytes of the file have been read so far (read
// ahead by buffering, so it is a position for messages and progress, not an
// exact packet boundary).
func (cf *File) Offset() int64 { return cf.counter.n }

// Packets returns the number of packets read so far.
func (cf *File) Packets() int64 { return cf.packets }

// Next returns the next packet's bytes and capture info, and its link type.
// The bytes are valid until the next call. It returns io.EOF at a clean end,
// and an error naming the file and position for a damaged one.
func (cf *File) Next() ([]byte, gopacket.CaptureInfo, layers.LinkType, error) {
	data, ci, err := cf.r.ZeroCopyReadPacketData()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, ci, 0, io.EOF
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, ci, 0, fmt.Errorf("%s: truncated after packet %d (byte offset ~%d): %w", cf.Path, cf.packets, cf.counter.n, err)
		}
		return nil, ci, 0, fmt.Errorf("%s: after packet %d (byte offset ~%d): %w", cf.Path, cf.packets, cf.counter.n, err)
	}
	cf.packets++
	link := cf.link
	if cf.ng != nil && len(ci.AncillaryData) > 0 {
		if lt, ok := ci.AncillaryData[0].(layers.LinkType); ok {
			link = lt
		}
	}
	return data, ci, link, nil
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
