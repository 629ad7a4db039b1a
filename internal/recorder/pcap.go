package recorder

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"

	"github.com/kscope-dev/kscope/internal/capture"
	"github.com/kscope-dev/kscope/internal/recording"
	"github.com/kscope-dev/kscope/internal/safefile"
	"github.com/kscope-dev/kscope/internal/tlskeys"
)

// pcapSink keeps the raw capture of a recording. The file is created
// with the first packet, whose link type it takes.
type pcapSink struct {
	path    string
	f       *os.File
	buf     *bufio.Writer
	w       *capture.PcapNGWriter
	err     error
	packets int64
	// secrets is the TLS key log whose new lines go into the capture as
	// Decryption Secrets Blocks, read at most every secretsEvery.
	secrets     *tlskeys.Tail
	secretsRead time.Time
	keyLines    []byte
}

// secretsEvery is how often the key log is looked at for new lines while
// packets are written.
const secretsEvery = 10 * time.Millisecond

func (s *pcapSink) write(link layers.LinkType, ci gopacket.CaptureInfo, data []byte) {
	if s.err != nil {
		return
	}
	if s.w == nil {
		if s.f, s.err = os.Create(s.path); s.err != nil {
			return
		}
		s.buf = bufio.NewWriterSize(s.f, 1<<20)
		if s.w, s.err = capture.NewPcapNGWriter(s.buf, link, capture.MaxPacketBytes); s.err != nil {
			return
		}
	}
	if s.secrets != nil && time.Since(s.secretsRead) >= secretsEvery {
		s.writeSecrets()
	}
	if s.err == nil {
		s.err = s.w.WritePacket(ci, data)
	}
	s.packets++
}

// writeSecrets copies the key log's new lines into the capture.
func (s *pcapSink) writeSecrets() {
	s.secretsRead = time.Now()
	s.keyLines = s.keyLines[:0]
	if err := s.secrets.Next(func(line []byte, _ int) { s.keyLines = append(s.keyLines, line...) }); err != nil {
		s.err = err
		return
	}
	s.err = s.w.WriteSecrets(s.keyLines)
}

func (s *pcapSink) close() error {
	if s.w == nil {
		return s.err
	}
	if s.secrets != nil && s.err == nil {
		s.writeSecrets()
	}
	return errors.Join(s.err, s.w.Flush(), s.buf.Flush(), s.f.Close())
}

// keepSecrets puts the key log's secrets into the recording: all of them
// at the start of the capture, for one-pass readers such as Wireshark (the
// blocks written as it went came after the first packets of the
// connections they are for), and, with --tls-keys attach (the broker's key
// log is outside the recording), a copy of mode 0600 beside it.
func keepSecrets(o *Options, pcapOut *pcapSink) error {
	if pcapOut == nil && !o.TLSKeysAttach {
		return nil
	}
	data, err := readKeyLogCopy(o.TLSKeyLog)
	if err != nil {
		return fmt.Errorf("TLS key log: %w", err)
	}
	if pcapOut != nil && pcapOut.w != nil {
		if err := capture.InjectSecrets(pcapOut.path, data); err != nil {
			return err
		}
	}
	if o.TLSKeysAttach {
		if err := os.WriteFile(filepath.Join(o.Out, recording.TLSKeyLogFile), data, 0o600); err != nil {
			return fmt.Errorf("copying the TLS key log: %w", err)
		}
	}
	return nil
}

// maxKeyLogCopy bounds the key log record copies into the recording
// (read into memory): about 300 000 TLS 1.3 sessions.
const maxKeyLogCopy = 256 << 20

// readKeyLogCopy reads the key log record copies into the recording.
func readKeyLogCopy(path string) ([]byte, error) {
	return safefile.ReadAll(path, maxKeyLogCopy)
}
