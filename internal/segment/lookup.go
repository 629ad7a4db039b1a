package segment

import (
	"errors"
	"fmt"
	"io"

	"github.com/kscope-dev/kscope/internal/records"
)

// Match is one batch found by Lookup.
type Match struct {
	// Batch is the batch's header; its Data is nil (Lookup does not keep
	// batch bytes).
	Batch records.Batch
	// Records is the batch's record count, decompressing a legacy
	// wrapper if needed to count.
	Records int
	// MessageIDs are the values of the message id header of the batch's
	// records, in order; records without one contribute nothing.
	MessageIDs []string
}

// LookupResult is what Lookup found in a byte range of a segment.
type LookupResult struct {
	Path     string
	Position int64
	Bytes    int64
	// Matches are the batches overlapping [Position, Position+Bytes), in
	// file order.
	Matches []Match
	// ScanStart is where the scan started: the position of the last
	// .index entry at or before Position, or 0 without a usable index.
	ScanStart int64
	// Skipped is the number of batches read between ScanStart and
	// Position.
	Skipped int
	// Damaged are the damaged byte ranges read past between ScanStart
	// and the end of the range, in file order (see [Damage]).
	Damaged []Damage
}

// Lookup returns the batches of the .log file at path that overlap the
// byte range [position, position+n), and the values of their records'
// header named header ("" reads no records and collects no ids). It is
// what ties a traced write (file, offset, bytes) to messages.
//
// It does not scan from the start of the file: it binary-searches the
// segment's .index file, next to it, for the nearest indexed batch at or
// before position, and reads from there (at most index.interval.bytes,
// 4 KiB by default, before the range). If the index is missing or leads
// astray, it reads from the start.
//
// Damage before the range is read past (and listed in Damaged): the
// batches after it are valid. Damage overlapping the range is listed too,
// and the first such is also the error, with the valid batches of the
// range in Matches; a range that ends inside a batch cut short by the end
// of the file gives an error wrapping records.ErrTruncated.
func Lookup(path string, position, n int64, header string, d *records.Decoder) (LookupResult, error) {
	res := LookupResult{Path: path, Position: position, Bytes: n}
	if position < 0 || n <= 0 {
		return res, &Error{Path: path, Pos: position, Err: fmt.Errorf("invalid range: position %d, %d bytes", position, n)}
	}
	if d == nil {
		d = new(records.Decoder)
	}
	r, err := Open(path, d)
	if err != nil {
		return res, err
	}
	defer r.Close()
	if position >= r.Size() {
		return res, &Error{Path: path, Pos: position, Err: fmt.Errorf("range starts at or after the end of the file (%d bytes)", r.Size())}
	}
	start := int64(0)
	if idx := indexPathFor(path); idx != "" {
		// An unreadable index only costs speed.
		if h, err := indexHint(idx, position); err == nil && h <= position {
			start = h
		}
	}
	res, err = lookupFrom(r, res, start, header)
	if (err != nil || len(res.Damaged) > 0) && start > 0 && !errors.Is(err, records.ErrTruncated) {
		// The index pointed somewhere that is not a batch boundary
		// (or the damage is before the range): start again from the
		// start of the file, which is always a boundary.
		res.Matches, res.Skipped, res.Damaged = nil, 0, nil
		res, err = lookupFrom(r, res, 0, header)
	}
	if err == nil {
		err = overlapping(r.Path(), res)
	}
	return res, err
}

// overlapping returns the first damage overlapping the looked-up range
// as an *Error, nil when there is none.
func overlapping(path string, res LookupResult) error {
	end := res.Position + res.Bytes
	for i := range res.Damaged {
		if d := &res.Damaged[i]; d.Start < end && d.End > res.Position {
			return &Error{Path: path, Pos: d.Start, Err: d}
		}
	}
	return nil
}

func lookupFrom(r *Reader, res LookupResult, start int64, header string) (LookupResult, error) {
	r.seek(start, seekWindow)
	res.ScanStart = start
	end := res.Position + res.Bytes
	d := r.Decoder()
	for {
		b, err := r.Next()
		if err == io.EOF {
			return res, nil
		}
		if d, ok := AsDamage(err); ok {
			if d.Start >= end {
				return res, nil
			}
			res.Damaged = append(res.Damaged, *d)
			continue
		}
		if err != nil {
			return res, err
		}
		if b.Position >= end {
			return res, nil
		}
		if b.Position+int64(b.Size) <= res.Position {
			res.Skipped++
			continue
		}
		count, ids, err := d.MessageIDs(b.Data, header)
		if err != nil {
			return res, batchError(r.Path(), b.Position, err)
		}
		b.Data = nil
		res.Matches = append(res.Matches, Match{Batch: b, Records: count, MessageIDs: ids})
	}
}
