package records

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// unzipper decompresses batches into one buffer that it reuses from batch
// to batch, never producing more than the limit.
//
// Snappy goes through franz-go's decompressor, after boundClaim has checked
// the decompressed size that snappy data declares up front. gzip, lz4 and
// zstd use the same codec packages franz-go uses (klauspost/compress,
// pierrec/lz4), read through a limit: franz-go's own decompressor is bounded
// only at math.MaxInt32 outside a client, and a few KiB of hostile zstd
// (RLE blocks: 4 bytes become 128 KiB) would make it produce gigabytes
// before any check after the call could reject them.
type unzipper struct {
	snappy kgo.Decompressor
	pool   *decompressPool

	src   bytes.Reader
	gz    *gzip.Reader
	lz4   *lz4.Reader
	zstd  *zstd.Decoder
	zstdN int // the limit u.zstd was made for
	out   bytes.Buffer
	lim   io.LimitedReader
}

func (u *unzipper) decompress(codec Codec, src []byte, limit int) ([]byte, error) {
	if err := boundClaim(codec, src, limit); err != nil {
		return nil, err
	}
	var (
		out []byte
		err error
	)
	switch codec {
	case CodecSnappy:
		out, err = u.unsnappy(src)
	case CodecGzip:
		u.src.Reset(src)
		if u.gz == nil {
			u.gz, err = gzip.NewReader(&u.src)
		} else {
			err = u.gz.Reset(&u.src)
		}
		if err == nil {
			out, err = u.readLimited(u.gz, limit)
		}
	case CodecLZ4:
		u.src.Reset(src)
		if u.lz4 == nil {
			u.lz4 = lz4.NewReader(&u.src)
		} else {
			u.lz4.Reset(&u.src)
		}
		out, err = u.readLimited(u.lz4, limit)
	case CodecZstd:
		out, err = u.unzstd(src, limit)
	default:
		err = fmt.Errorf("unknown compression codec %d", codec)
	}
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("decompressing %s: %w", codec, err)
	}
	if len(out) > limit {
		return nil, fmt.Errorf("%w: %s records decompressed to %d bytes, limit %d", ErrTooLarge, codec, len(out), limit)
	}
	return out, nil
}

// readLimited reads r to its end into the reused buffer, failing as soon as
// more than limit bytes come out.
func (u *unzipper) readLimited(r io.Reader, limit int) ([]byte, error) {
	u.out.Reset()
	u.lim.R, u.lim.N = r, int64(limit)+1
	n, err := u.out.ReadFrom(&u.lim)
	u.lim.R = nil
	if err != nil {
		return nil, err
	}
	if n > int64(limit) {
		return nil, fmt.Errorf("%w: decompressed data exceeds %d bytes", ErrTooLarge, limit)
	}
	return u.out.Bytes(), nil
}

// unzstd decodes with a decoder whose memory limit is the batch limit:
// klauspost's DecodeAll refuses to produce more than that.
func (u *unzipper) unzstd(src []byte, limit int) ([]byte, error) {
	if u.zstd == nil || u.zstdN != limit {
		if u.zstd != nil {
			u.zstd.Close()
		}
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(limit)))
		if err != nil {
			return nil, err
		}
		u.zstd, u.zstdN = d, limit
	}
	out, err := u.zstd.DecodeAll(src, u.out.Bytes()[:0])
	if err != nil {
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || errors.Is(err, zstd.ErrWindowSizeExceeded) {
			return nil, fmt.Errorf("%w: zstd: %w", ErrTooLarge, err)
		}
		return nil, err
	}
	// Keep the (possibly grown) buffer for the next batch.
	u.out = *bytes.NewBuffer(out)
	return out, nil
}

// unsnappy decodes snappy (raw or xerial-framed) with franz-go, whose
// output boundClaim has bounded already.
func (u *unzipper) unsnappy(src []byte) ([]byte, error) {
	if u.snappy == nil {
		u.pool = new(decompressPool)
		u.snappy = kgo.DefaultDecompressor(u.pool)
	}
	out, err := u.snappy.Decompress(src, kgo.CodecSnappy)
	if err != nil {
		return nil, err
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
