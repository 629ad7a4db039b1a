package records

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
)

// unzipper decompresses batches with franz-go's decompressor, decoding into
// one buffer that it reuses from batch to batch.
//
// Bounding the output: kgo's public API offers no bounded decompressor.
// DefaultDecompressor is bounded at math.MaxInt32, and the client option
// MaxDecompressBatchBytes only applies to a client's own decompressor. So
// the limit is enforced in two steps:
//
//   - before decompressing, boundClaim rejects snappy and zstd input whose
//     header claims a decompressed size over the limit, because for those
//     codecs the decoders allocate the claimed size up front (a 20-byte
//     input could otherwise cost 2 GiB);
//   - after decompressing, the output length is checked.
//
// Limitation: gzip and lz4 stream and have no size claim to check, and
// zstd need not declare a size (nor its later frames be checked). For
// those, a hostile batch can make kgo produce up to MaxInt32 bytes before
// the length check rejects it. Memory grows with the output actually
// produced, so the input must be big enough to expand that far: about
// 1000:1 for gzip, 250:1 for lz4, but 32768:1 for zstd, whose RLE blocks
// turn 4 bytes into 128 KiB (a 4 KiB batch made kgo allocate about 680 MB
// in total, in 0.7 s, before being rejected; about 64 KiB reaches the
// MaxInt32 bound). Closing this needs a decompressor that stops at the
// limit, which kgo's public API does not offer.
type unzipper struct {
	dec  kgo.Decompressor
	pool *decompressPool
}

func (u *unzipper) decompress(codec Codec, src []byte, limit int) ([]byte, error) {
	if err := boundClaim(codec, src, limit); err != nil {
		return nil, err
	}
	if u.dec == nil {
		u.pool = new(decompressPool)
		u.dec = kgo.DefaultDecompressor(u.pool)
	}
	out, err := u.dec.Decompress(src, kgo.CompressionCodecType(codec))
	if err != nil {
		if errors.Is(err, kgo.ErrMaxDecompress) {
			return nil, fmt.Errorf("%w: decompressing %s: %w", ErrTooLarge, codec, err)
		}
		return nil, fmt.Errorf("decompressing %s: %w", codec, err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: %s records decompressed to %d bytes, limit %d", ErrTooLarge, codec, len(out), limit)
	}
	// Decode the next batch into this one's buffer: records handed out
	// for this batch are valid only until then, as documented on Decoder.
	u.pool.buf = out
	return out, nil
}

// decompressPool implements kgo.PoolDecompressBytes for a single Decoder:
// it hands kgo the Decoder's buffer to decompress into. kgo only writes
// into the slice's capacity and returns the (possibly grown) result, which
// unzipper keeps for the next call. Without a pool, kgo would allocate a
// fresh output slice for every batch.
type decompressPool struct {
	buf []byte
}

func (p *decompressPool) GetDecompressBytes([]byte, kgo.CompressionCodecType) []byte {
	b := p.buf[:0]
	p.buf = nil
	return b
}

// PutDecompressBytes is called by kgo when decompression fails, with the
// slice GetDecompressBytes returned.
func (p *decompressPool) PutDecompressBytes(b []byte) {
	p.buf = b[:0]
}
