package wire

import "strings"

// Allocation on the per-request path. A live agent decodes every request
// of a broker; what it allocates per request is most of its garbage
// collection, so the small values every request carries come from chunks
// and the strings it repeats are interned.

// slabChunk is the values per chunk: a kept event pins its chunk, so
// chunks stay small (512 bytes of int64).
const slabChunk = 64

// slab hands out values of T from chunks: one allocation per chunk, not
// one per value. Values are never reused: an emitted event may be kept,
// and it points into the chunk.
type slab[T any] struct{ free []T }

// take returns an empty slice with room for n values (append to it).
func (s *slab[T]) take(n int) []T {
	if n > slabChunk {
		return make([]T, 0, n)
	}
	if n > len(s.free) {
		s.free = make([]T, slabChunk)
	}
	out := s.free[:0:n]
	s.free = s.free[n:]
	return out
}

// one returns a pointer to a copy of v.
func (s *slab[T]) one(v T) *T {
	x := s.take(1)[:1]
	x[0] = v
	return &x[0]
}

// maxInterned bounds the interned strings: a hostile capture can name any
// number of topics.
const maxInterned = 1 << 14

// interner returns one string per distinct value, so that a topic named
// by every request is not a new string in every request. It takes
// strings that point into reused buffers (kmsg's unsafe decoding) and
// returns strings that own their bytes.
type interner struct{ m map[string]string }

func (in *interner) intern(s string) string {
	if v, ok := in.m[s]; ok {
		return v
	}
	v := strings.Clone(s)
	if in.m == nil {
		in.m = make(map[string]string)
	}
	if len(in.m) < maxInterned {
		in.m[v] = v
	}
	return v
}
