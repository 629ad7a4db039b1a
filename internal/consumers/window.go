package consumers

// window holds the newest values of a bounded sequence, oldest first.
// The agent adds to the end-to-end rings for every produced partition
// and consumer fetch: dropping the oldest by a reslice and appending let
// append reallocate and copy the whole ring every few hundred additions,
// so the values are kept in an array they are moved back to the front of
// only when they reach its end, and which grows until it holds them twice.
type window[T any] struct {
	// array is the backing array from its start; items are array[start:].
	array []T
	start int
}

// items are the values held, oldest first; valid until the next push or
// keep.
func (w *window[T]) items() []T { return w.array[w.start:] }

// push adds v as the newest value; when n are held already, the oldest
// leaves first and is returned.
func (w *window[T]) push(v T, n int) (oldest T, dropped bool) {
	if len(w.array)-w.start >= n {
		oldest, dropped = w.array[w.start], true
		w.start++
	}
	if len(w.array) == cap(w.array) && w.start > 0 && 2*w.start >= len(w.array) {
		// Half the array or more is free at its front: move back.
		k := copy(w.array, w.array[w.start:])
		clear(w.array[k:])
		w.array, w.start = w.array[:k], 0
	}
	w.array = append(w.array, v)
	return oldest, dropped
}

// keep truncates the values held to their first k (the caller has moved
// the ones it keeps there).
func (w *window[T]) keep(k int) {
	end := w.start + k
	clear(w.array[end:])
	w.array = w.array[:end]
	if k == 0 {
		w.array, w.start = w.array[:0], 0
	}
}
