package segment

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// LeaderEpochFile is the file in a partition directory that maps leader
// epochs to the first offset written in each.
const LeaderEpochFile = "leader-epoch-checkpoint"

// maxCheckpointSize bounds the read of a leader-epoch-checkpoint: one
// short line per leader epoch.
const maxCheckpointSize = 4 << 20

// EpochEntry is one line of a leader-epoch-checkpoint.
type EpochEntry struct {
	Epoch       int32
	StartOffset int64
}

// ReadLeaderEpochCheckpoint reads a leader-epoch-checkpoint file as Kafka's
// CheckpointFile writes it: a version line (0), a count line, then that
// many "epoch startOffset" lines. Epochs must increase and start offsets
// must not decrease, as Kafka's LeaderEpochFileCache keeps them.
func ReadLeaderEpochCheckpoint(path string) ([]EpochEntry, error) {
	f, _, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxCheckpointSize+1))
	line, read := 0, int64(0)
	bad := func(format string, args ...any) error {
		return &Error{Path: path, Pos: -1, Err: fmt.Errorf("line %d: "+format, append([]any{line}, args...)...)}
	}
	next := func() (string, bool) {
		if !sc.Scan() {
			return "", false
		}
		line++
		read += int64(len(sc.Bytes())) + 1
		return sc.Text(), true
	}
	v, ok := next()
	if !ok {
		if err := sc.Err(); err != nil {
			return nil, &Error{Path: path, Pos: -1, Err: err}
		}
		return nil, &Error{Path: path, Pos: -1, Err: fmt.Errorf("empty file")}
	}
	if strings.TrimSpace(v) != "0" {
		return nil, bad("version %q, want 0", v)
	}
	c, ok := next()
	if !ok {
		return nil, bad("no entry count")
	}
	count, err := strconv.Atoi(strings.TrimSpace(c))
	if err != nil || count < 0 {
		return nil, bad("entry count %q is not a number", c)
	}
	var entries []EpochEntry // grown by lines read, not by count
	for range count {
		l, ok := next()
		if !ok {
			if err := sc.Err(); err != nil {
				return entries, bad("%v", err)
			}
			return entries, bad("%d entries, the count line says %d", len(entries), count)
		}
		fields := strings.Fields(l)
		if len(fields) != 2 {
			return entries, bad("%q is not \"epoch offset\"", l)
		}
		epoch, err1 := strconv.ParseInt(fields[0], 10, 32)
		off, err2 := strconv.ParseInt(fields[1], 10, 64)
		if err1 != nil || err2 != nil || epoch < 0 || off < 0 {
			return entries, bad("%q is not \"epoch offset\"", l)
		}
		e := EpochEntry{Epoch: int32(epoch), StartOffset: off}
		if n := len(entries); n > 0 && (e.Epoch <= entries[n-1].Epoch || e.StartOffset < entries[n-1].StartOffset) {
			return entries, bad("epoch %d at offset %d does not follow epoch %d at offset %d",
				e.Epoch, e.StartOffset, entries[n-1].Epoch, entries[n-1].StartOffset)
		}
		entries = append(entries, e)
	}
	if l, ok := next(); ok {
		return entries, bad("unexpected %q after %d entries", l, count)
	}
	if err := sc.Err(); err != nil {
		return entries, bad("%v", err)
	}
	if read > maxCheckpointSize {
		return entries, &Error{Path: path, Pos: -1, Err: fmt.Errorf("larger than %d bytes", maxCheckpointSize)}
	}
	return entries, nil
}
