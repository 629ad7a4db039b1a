package bench

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Payloads are slices of one pre-generated, read-only pool, so the hot path
// allocates nothing for values (kgo only reads Record.Value). Each message
// starts at a random offset in the pool: identical values side by side in
// a batch would compress far better than the compressibility asked for.
//
// The pool is made of blocks of compressBlock bytes, each a run of random
// bytes followed by a run of zeros; the zeros are the fraction c of the
// block. A compressor squeezes the zero runs to almost nothing and cannot
// shrink the random runs, so the compressed size is about (1-c) of the
// original, as with OpenMessaging Benchmark's payload files.
const (
	compressBlock = 256
	poolSize      = 4 << 20
)

type payloads struct {
	pool []byte
	size sizeDist
}

// newPayloads builds the pool for payloads of sizes from size with the
// given compressibility (fraction not random). seed makes it reproducible.
func newPayloads(size sizeDist, compressibility float64, seed uint64) *payloads {
	n := poolSize
	if n < 2*size.max {
		n = 2 * size.max
	}
	pool := make([]byte, n)
	rng := rand.New(rand.NewPCG(seed, 0x6b73636f7065))
	random := int(math.Round((1 - compressibility) * compressBlock))
	for off := 0; off < n; off += compressBlock {
		end := min(off+random, n)
		for i := off; i < end; i += 8 {
			v := rng.Uint64()
			for k := 0; k < 8 && i+k < end; k++ {
				pool[i+k] = byte(v >> (8 * k))
			}
		}
	}
	return &payloads{pool: pool, size: size}
}

// next returns a payload: a size from the distribution, at a random
// offset of the pool. The slice must not be written to.
func (p *payloads) next(rng *rand.Rand) []byte {
	n := p.size.min
	if p.size.max > p.size.min {
		n += rng.IntN(p.size.max - p.size.min + 1)
	}
	off := rng.IntN(len(p.pool) - n + 1)
	return p.pool[off : off+n : off+n]
}

// keys chooses message keys from a fixed set of pre-made keys.
type keys struct {
	dist keyDist
	set  [][]byte
}

func newKeys(d keyDist) *keys {
	k := &keys{dist: d}
	if d.mode != keysNone {
		k.set = make([][]byte, d.n)
		for i := range k.set {
			k.set[i] = []byte(fmt.Sprintf("key-%08d", i))
		}
	}
	return k
}

// next returns the key of a producer's message seq (nil: no key).
func (k *keys) next(rng *rand.Rand, seq uint64) []byte {
	switch k.dist.mode {
	case keysRoundRobin:
		return k.set[seq%uint64(len(k.set))]
	case keysUniform:
		return k.set[rng.IntN(len(k.set))]
	case keysHot:
		if len(k.set) == 1 || rng.Float64() < k.dist.hot {
			return k.set[0]
		}
		return k.set[1+rng.IntN(len(k.set)-1)]
	}
	return nil
}
