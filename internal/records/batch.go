package records

import (
	"encoding/binary"
	"hash/crc32"
	"strconv"
)

// Codec is the compression codec of a batch, from the low three bits of its
// attributes.
type Codec int8

// The codecs Kafka defines. Values 5 to 7 are unassigned; a batch using one
// can be scanned, but its records cannot be decoded.
const (
	CodecNone   Codec = 0
	CodecGzip   Codec = 1
	CodecSnappy Codec = 2
	CodecLZ4    Codec = 3
	CodecZstd   Codec = 4
)

func (c Codec) String() string {
	switch c {
	case CodecNone:
		return "none"
	case CodecGzip:
		return "gzip"
	case CodecSnappy:
		return "snappy"
	case CodecLZ4:
		return "lz4"
	case CodecZstd:
		return "zstd"
	}
	return "unknown(" + strconv.Itoa(int(c)) + ")"
}

// TimestampType says what a batch's timestamps mean.
type TimestampType int8

const (
	// NoTimestampType is the type of magic 0 messages, which have no
	// timestamp.
	NoTimestampType TimestampType = -1
	// CreateTime timestamps were set by the producer.
	CreateTime TimestampType = 0
	// LogAppendTime timestamps were set by the broker when it appended
	// the batch.
	LogAppendTime TimestampType = 1
)

func (t TimestampType) String() string {
	switch t {
	case NoTimestampType:
		return "none"
	case CreateTime:
		return "create_time"
	case LogAppendTime:
		return "log_append_time"
	}
	return "unknown(" + strconv.Itoa(int(t)) + ")"
}

// Batch is one magic 2 record batch, or one top-level magic 0 or 1 message
// (either a single record or a wrapper holding a compressed inner message
// set), as found in the input. Only the header is decoded; records are
// decoded by [Decoder.Records].
type Batch struct {
	// Position is the batch's byte offset within the input.
	Position int64
	// Size is the batch's size in bytes, its 12-byte prefix (base offset
	// and length) included.
	Size int
	// Data is the whole batch, Size bytes. It aliases the input (or a
	// [Reader]'s buffer, valid until the next call to Next).
	Data []byte

	// Magic is the format version: 0, 1 or 2.
	Magic int8
	// Attributes is the raw attributes field (one byte, widened, for
	// magic 0 and 1).
	Attributes int16
	Codec      Codec

	// BaseOffset is the offset of the first record. It is -1 (unknown)
	// for a magic 0 or 1 compressed wrapper, whose header carries only
	// the offset of its last record.
	BaseOffset int64
	// LastOffset is the offset of the last record: base offset plus the
	// last offset delta for magic 2, the message offset otherwise.
	LastOffset int64
	// NumRecords is the record count. It is -1 (unknown) for a magic 0 or
	// 1 compressed wrapper, whose inner messages can only be counted by
	// decompressing them: see [Decoder.CountRecords].
	NumRecords int

	// CRC is the stored checksum and CRCValid whether it matches the
	// bytes: CRC-32C of attributes through the end for magic 2, CRC-32
	// (IEEE) of magic through the end for magic 0 and 1.
	CRC      uint32
	CRCValid bool

	// Producer fields and the leader epoch are -1 for magic 0 and 1.
	ProducerID           int64
	ProducerEpoch        int16
	BaseSequence         int32
	PartitionLeaderEpoch int32

	Transactional bool
	// Control batches hold transaction markers, not user records.
	Control bool
	// DeleteHorizon is set by the log cleaner (KIP-534): FirstTimestamp
	// then holds the delete horizon of the batch's tombstones.
	DeleteHorizon bool

	TimestampType TimestampType
	// FirstTimestamp is the base timestamp of a magic 2 batch; for magic
	// 0 and 1 both timestamps are the message's, -1 for magic 0.
	FirstTimestamp int64
	MaxTimestamp   int64
}

// Layout constants. Every batch and legacy message starts with an 8-byte
// offset and a 4-byte length counting the bytes after them; the magic byte
// is at the same place, byte 16, in all three formats.
const (
	prefixLen   = 12 // base offset + length
	magicEnd    = 17 // bytes needed to read the magic byte
	v2HeaderLen = 61 // magic 2 batch header, up to the record count

	// Minimum values of the length field, after Kafka's checks.
	minLengthV0 = 14                      // crc, magic, attributes, key and value lengths
	minLengthV1 = minLengthV0 + 8         // plus a timestamp
	minLengthV2 = v2HeaderLen - prefixLen // an empty batch

	// minRecordV2 is the smallest magic 2 record: length, attributes,
	// timestamp delta, offset delta, key length, value length and header
	// count, one byte each.
	minRecordV2 = 7

	attrCodecMask     = 0x07
	attrTimestampType = 0x08
	attrTransactional = 0x10
	attrControl       = 0x20
	attrDeleteHorizon = 0x40
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

var be = binary.BigEndian

// batchSize validates the start of a batch, as many of its first 17 bytes as
// are in p, and returns its size including the prefix. It does not check
// that the size fits in what follows. A p too short to hold the prefix is
// truncation; a length that no batch can have, or an unknown magic, is
// corruption.
func batchSize(p []byte, pos int64, maxSize int) (int, error) {
	if len(p) < prefixLen {
		return 0, errorf(pos, "%w: %d bytes remain, fewer than the %d-byte batch prefix", ErrTruncated, len(p), prefixLen)
	}
	length := int32(be.Uint32(p[8:]))
	if length < minLengthV0 {
		return 0, errorf(pos, "length %d is below the minimum %d", length, minLengthV0)
	}
	if int64(length) > int64(maxSize) {
		return 0, errorf(pos, "length %d exceeds the maximum batch size %d", length, maxSize)
	}
	if len(p) >= magicEnd {
		magic := int8(p[16])
		minLength := int32(minLengthV0)
		switch magic {
		case 0:
		case 1:
			minLength = minLengthV1
		case 2:
			minLength = minLengthV2
		default:
			return 0, errorf(pos, "unknown magic %d", magic)
		}
		if length < minLength {
			return 0, errorf(pos, "length %d is below the minimum %d for magic %d", length, minLength, magic)
		}
	}
	return prefixLen + int(length), nil
}

// parseBatch decodes the header of the batch at the start of data. The CRC is
// computed only when verify is set; the hot path of counting records skips
// it.
func parseBatch(data []byte, pos int64, maxSize int, verify bool) (Batch, error) {
	size, err := batchSize(data, pos, maxSize)
	if err != nil {
		return Batch{}, err
	}
	if size > len(data) {
		return Batch{}, errorf(pos, "%w: length %d exceeds remaining %d bytes", ErrTruncated, size-prefixLen, len(data)-prefixLen)
	}
	b := Batch{Position: pos, Size: size, Data: data[:size:size]}
	if b.Data[16] == 2 {
		err = parseV2Header(&b, verify)
	} else {
		parseLegacyHeader(&b, verify)
	}
	return b, err
}

// parseV2Header fills b from a magic 2 batch header. batchSize guaranteed
// len(b.Data) >= v2HeaderLen.
func parseV2Header(b *Batch, verify bool) error {
	d := b.Data
	b.Magic = 2
	b.BaseOffset = int64(be.Uint64(d[0:]))
	b.PartitionLeaderEpoch = int32(be.Uint32(d[12:]))
	b.CRC = be.Uint32(d[17:])
	b.Attributes = int16(be.Uint16(d[21:]))
	b.LastOffset = b.BaseOffset + int64(int32(be.Uint32(d[23:])))
	b.FirstTimestamp = int64(be.Uint64(d[27:]))
	b.MaxTimestamp = int64(be.Uint64(d[35:]))
	b.ProducerID = int64(be.Uint64(d[43:]))
	b.ProducerEpoch = int16(be.Uint16(d[51:]))
	b.BaseSequence = int32(be.Uint32(d[53:]))
	n := int32(be.Uint32(d[57:]))

	a := b.Attributes
	b.Codec = Codec(a & attrCodecMask)
	b.TimestampType = CreateTime
	if a&attrTimestampType != 0 {
		b.TimestampType = LogAppendTime
	}
	b.Transactional = a&attrTransactional != 0
	b.Control = a&attrControl != 0
	b.DeleteHorizon = a&attrDeleteHorizon != 0
	if verify {
		b.CRCValid = crc32.Checksum(d[21:], castagnoli) == b.CRC
	}

	if n < 0 {
		return errorf(b.Position, "negative record count %d", n)
	}
	// Callers sum record counts without decoding records; for an
	// uncompressed batch a count the bytes cannot hold is caught here.
	if body := len(d) - v2HeaderLen; b.Codec == CodecNone && int64(n) > int64(body/minRecordV2) {
		return errorf(b.Position, "record count %d exceeds what %d bytes of records can hold", n, body)
	}
	b.NumRecords = int(n)
	return nil
}

// parseLegacyHeader fills b from a magic 0 or 1 message header. batchSize
// guaranteed len(b.Data) >= prefixLen+minLengthV1 for magic 1, +minLengthV0
// for magic 0.
func parseLegacyHeader(b *Batch, verify bool) {
	d := b.Data
	b.Magic = int8(d[16])
	offset := int64(be.Uint64(d[0:]))
	b.LastOffset = offset
	b.CRC = be.Uint32(d[12:])
	b.Attributes = int16(d[17])
	b.Codec = Codec(d[17] & attrCodecMask)
	b.TimestampType = NoTimestampType
	b.FirstTimestamp, b.MaxTimestamp = -1, -1
	if b.Magic == 1 {
		b.TimestampType = CreateTime
		if d[17]&attrTimestampType != 0 {
			b.TimestampType = LogAppendTime
		}
		ts := int64(be.Uint64(d[18:]))
		b.FirstTimestamp, b.MaxTimestamp = ts, ts
	}
	b.ProducerID, b.ProducerEpoch, b.BaseSequence, b.PartitionLeaderEpoch = -1, -1, -1, -1
	if verify {
		b.CRCValid = crc32.ChecksumIEEE(d[16:]) == b.CRC
	}
	if b.Codec == CodecNone {
		b.BaseOffset, b.NumRecords = offset, 1
	} else {
		b.BaseOffset, b.NumRecords = -1, -1
	}
}
