package tlsdecrypt

import (
	"encoding/binary"
	"fmt"
)

// A capture that loses a segment of a connection loses part of a record,
// and with it the record boundaries and the sequence numbers that the
// nonces of the records after it depend on. Rather than giving the rest
// of a long-lived connection up (an always-on capture drops a packet now
// and then), the direction looks for the next record: a plausible header
// whose record, decrypted as one of the next few sequence numbers,
// authenticates. An AEAD tag that verifies is proof enough (a false match
// has a chance of 2^-128). The search is bounded: it costs at most
// maxResyncTrials decryptions per gap, then the connection is Lost.

// resync is a direction's search for its next record after a gap.
type resync struct {
	lost   int64 // bytes the capture lost (all gaps since the last record)
	trials int   // decryptions tried so far
}

// Bounds of a search: decryptions in all, and sequence numbers ahead of
// the last record's per candidate (a record carries at least 1 byte, so
// a gap of n bytes hides at most n/minRecordBytes records).
const (
	maxResyncTrials = 4096
	minRecordBytes  = 5 + 1 + 16 // header, a byte, the tag
)

// Resyncs counts the gaps the connection found its records again after.
func (c *Conn) Resyncs() int { return c.resyncs }

// lose starts (or extends) dir's search after n lost bytes. The bytes
// buffered before the gap are a record's head: useless now.
func (c *Conn) lose(dir Direction, n int) {
	d := &c.dirs[dir]
	d.bufStart += int64(len(d.buf)) + int64(n)
	d.buf, d.off = d.buf[:0], 0
	if d.resync == nil {
		d.resync = &resync{}
	}
	d.resync.lost += int64(n)
}

// findRecord scans dir's buffer for the next record after a gap and
// returns its size once one decrypts (the bytes before it are dropped and
// the direction's sequence number set), 0 while more bytes are needed.
func (c *Conn) findRecord(dir Direction) (int, error) {
	d := &c.dirs[dir]
	r := d.resync
	ahead := uint64(min(r.lost/minRecordBytes+2, maxResyncTrials))
	for i := d.off; i+5 <= len(d.buf); i++ {
		b := d.buf[i:]
		typ, ver, n := b[0], binary.BigEndian.Uint16(b[1:3]), int(binary.BigEndian.Uint16(b[3:5]))
		if typ != recordAppData && typ != recordAlert || ver != versionTLS12 || n < 17 || n > maxRecord {
			continue
		}
		if len(b) < 5+n {
			// A candidate not whole yet: wait for it, unless what is
			// held already exceeds any record.
			if len(d.buf)-d.off > 2*(maxRecord+5) {
				continue
			}
			d.off = i
			return 0, nil
		}
		for k := range ahead {
			if r.trials >= maxResyncTrials {
				return 0, c.stop(Lost, fmt.Sprintf("%s: the capture lost %d bytes; no record after them decrypted in %d tries", dir, r.lost, r.trials))
			}
			r.trials++
			if _, _, err := c.openSeq(d, d.seq+k, b[:5], b[5:5+n]); err == nil {
				d.off, d.seq, d.resync = i, d.seq+k, nil
				c.resyncs++
				return 5 + n, nil
			}
		}
	}
	// Keep the last 4 bytes: the start of a header cut by the chunk's end.
	d.off = max(d.off, len(d.buf)-4)
	return 0, nil
}
