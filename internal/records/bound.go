package records

import (
	"bytes"
	"fmt"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
)

// xerialMagic starts snappy data framed by the xerial snappy-java stream,
// which the Java client writes: then a version, a compatible version, and
// blocks each behind a 4-byte big-endian length.
var xerialMagic = []byte{130, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

const xerialHeaderLen = 16

// boundClaim rejects compressed data whose header claims more than limit
// decompressed bytes, for the codecs whose decoders allocate the claim
// before decoding (see unzipper). It reads only length headers; malformed
// framing is left to the decompressor to report.
func boundClaim(codec Codec, src []byte, limit int) error {
	var claim uint64
	switch codec {
	case CodecSnappy:
		// Same test as kgo, so both agree on which framing src uses.
		if len(src) > xerialHeaderLen && bytes.HasPrefix(src, xerialMagic) {
			for rem := src[xerialHeaderLen:]; len(rem) >= 4; {
				n := int(be.Uint32(rem))
				rem = rem[4:]
				if n < 0 || n > len(rem) {
					return nil
				}
				l, err := s2.DecodedLen(rem[:n])
				if err != nil {
					return nil
				}
				claim += uint64(l)
				rem = rem[n:]
			}
		} else {
			l, err := s2.DecodedLen(src)
			if err != nil {
				return nil
			}
			claim = uint64(l)
		}
	case CodecZstd:
		var h zstd.Header
		if h.Decode(src) != nil || !h.HasFCS {
			return nil
		}
		claim = h.FrameContentSize
	default:
		return nil
	}
	if claim > uint64(limit) {
		return fmt.Errorf("%w: %s data claims %d decompressed bytes, limit %d", ErrTooLarge, codec, claim, limit)
	}
	return nil
}
