package clients

// tally counts the values of one of a client's settings (acks, codec,
// max_wait_ms, ...). A client rarely changes them, so the value counted
// last is compared first instead of hashed: hashing them for every request
// was a fifth of this view's producer rows' cost in the agent.
type tally[K comparable] struct {
	m map[K]*int64
	// limit bounds the distinct values kept (0: none); further values are
	// not counted.
	limit int
	last  K
	lastN *int64
}

func newTally[K comparable](limit int) tally[K] {
	return tally[K]{m: map[K]*int64{}, limit: limit}
}

// add counts one request with value k.
func (t *tally[K]) add(k K) {
	if t.lastN != nil && t.last == k {
		*t.lastN++
		return
	}
	n := t.m[k]
	if n == nil {
		if t.limit > 0 && len(t.m) >= t.limit {
			return
		}
		n = new(int64)
		t.m[k] = n
	}
	*n++
	t.last, t.lastN = k, n
}

// counts are the requests by value (an empty map for none).
func (t *tally[K]) counts() map[K]int64 {
	out := make(map[K]int64, len(t.m))
	for k, n := range t.m {
		out[k] = *n
	}
	return out
}
