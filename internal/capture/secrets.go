package capture

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// InjectSecrets rewrites the pcapng file at path with one Decryption
// Secrets Block holding keyLog (NSS key log lines) right after its section
// header, and without the secrets blocks it had: what Wireshark's `editcap
// --inject-secrets` does. A capture written while its key log was still
// growing has its blocks after the first packets of the connections they
// are for (an agent writes a TLS 1.3 client's traffic secret after the
// client's first records); Wireshark reads a capture in one pass and would
// miss them. The file is replaced atomically (a temporary file renamed
// over it); blocks are copied as they are, lengths checked as ngGuard
// does.
func InjectSecrets(path string, keyLog []byte) error {
	in, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("capture: inject secrets: %w", err)
	}
	defer in.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), ".secrets-*.pcapng")
	if err != nil {
		return fmt.Errorf("capture: inject secrets: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: a no-op
	if st, err := in.Stat(); err == nil {
		_ = tmp.Chmod(st.Mode().Perm())
	}
	w := bufio.NewWriterSize(tmp, 1<<20)
	if err := copyWithSecrets(bufio.NewReaderSize(in, 1<<20), w, keyLog); err != nil {
		tmp.Close()
		return fmt.Errorf("capture: inject secrets into %s: %w", path, err)
	}
	if err := errors.Join(w.Flush(), tmp.Sync(), tmp.Close()); err != nil {
		return fmt.Errorf("capture: inject secrets: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("capture: inject secrets: %w", err)
	}
	return nil
}

// copyWithSecrets copies a pcapng stream block by block: each section
// header is followed by the secrets block, and the stream's own secrets
// blocks are dropped.
func copyWithSecrets(r io.Reader, w io.Writer, keyLog []byte) error {
	var hdr [12]byte
	order := binary.ByteOrder(binary.LittleEndian)
	buf := make([]byte, 0, 64<<10)
	for pos := int64(0); ; {
		if _, err := io.ReadFull(r, hdr[:8]); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("block at byte offset %d: %w", pos, err)
		}
		typ := binary.LittleEndian.Uint32(hdr[0:4])
		n := 8
		if typ == ngSHB {
			if _, err := io.ReadFull(r, hdr[8:12]); err != nil {
				return fmt.Errorf("section header at byte offset %d: %w", pos, err)
			}
			n = 12
			switch {
			case binary.BigEndian.Uint32(hdr[8:12]) == ngByteMagic:
				order = binary.BigEndian
			case binary.LittleEndian.Uint32(hdr[8:12]) == ngByteMagic:
				order = binary.LittleEndian
			default:
				return fmt.Errorf("section header at byte offset %d: bad byte-order magic", pos)
			}
		}
		length := int64(order.Uint32(hdr[4:8]))
		if length < int64(n)+4 || length > ngMaxBlock || length%4 != 0 {
			return fmt.Errorf("block at byte offset %d: length %d is out of range", pos, length)
		}
		// length is bounded (ngMaxBlock) before anything is sized by it.
		buf = slices.Grow(buf[:0], int(length))[:length]
		copy(buf, hdr[:n])
		if _, err := io.ReadFull(r, buf[n:]); err != nil {
			return fmt.Errorf("block at byte offset %d: %w", pos, err)
		}
		pos += length
		if order.Uint32(hdr[0:4]) == ngDSB {
			continue
		}
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if typ == ngSHB {
			if err := writeSecretsBlocks(w, order, keyLog); err != nil {
				return err
			}
		}
	}
}

// maxSecretsBlock bounds the key log bytes of one secrets block, well
// under the block size readers accept (ngMaxBlock here): a long key log
// is split at line ends into several.
const maxSecretsBlock = 512 << 10

// writeSecretsBlocks writes keyLog as Decryption Secrets Blocks of at
// most maxSecretsBlock bytes each, split after a newline.
func writeSecretsBlocks(w io.Writer, order binary.ByteOrder, keyLog []byte) error {
	for len(keyLog) > 0 {
		n := len(keyLog)
		if n > maxSecretsBlock {
			n = maxSecretsBlock
			if i := bytes.LastIndexByte(keyLog[:n], '\n'); i > 0 {
				n = i + 1
			}
		}
		if _, err := w.Write(secretsBlock(order, keyLog[:n])); err != nil {
			return err
		}
		keyLog = keyLog[n:]
	}
	return nil
}

// secretsBlock is a Decryption Secrets Block holding keyLog.
func secretsBlock(order binary.ByteOrder, keyLog []byte) []byte {
	padded := (len(keyLog) + 3) &^ 3
	total := 8 + 8 + padded + 4
	block := make([]byte, total)
	order.PutUint32(block[0:], ngDSB)
	order.PutUint32(block[4:], uint32(total))
	order.PutUint32(block[8:], SecretsTLSKeyLog)
	order.PutUint32(block[12:], uint32(len(keyLog)))
	copy(block[16:], keyLog)
	order.PutUint32(block[total-4:], uint32(total))
	return block
}
