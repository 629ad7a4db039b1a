package fetchsplit

import (
	"cmp"
	"slices"
)

// history is one partition's high watermark marks: at most maxMarks,
// sorted by time with rising watermarks.
//
// Marks come in time order almost always (each produce answer and fetch
// response adds one), so the common addition is the newest at the end,
// and at the bound the oldest leaves. Shifting the slice down for each
// (as slices.Delete does) cost the agent a 1 KiB move per produced
// partition; here, once the marks reach the bound, they live in an
// array twice its size: the oldest leaves by a reslice, and the marks are
// moved back to the array's front only when they reach its end, once
// every maxMarks additions.
type history struct {
	marks []mark
	// array is nil until the marks first reach maxMarks.
	array []mark
}

// add notes that the high watermark was at least hwm from at on. A mark
// that says less than an earlier one adds nothing, and one that says
// more than later ones replaces them (they said too little).
func (h *history) add(at, hwm int64) {
	ms := h.marks
	i := len(ms) // the first mark after at: none, almost always
	if i > 0 && ms[i-1].at > at {
		i, _ = slices.BinarySearchFunc(ms, at, func(m mark, t int64) int { return cmp.Compare(m.at, t+1) })
	}
	if i > 0 && ms[i-1].hwm >= hwm {
		return
	}
	j := i
	for j < len(ms) && ms[j].hwm <= hwm {
		j++
	}
	if i < len(ms) {
		// Out of time order, rare: the general replacement.
		ms = slices.Replace(ms, i, j, mark{at, hwm})
		h.marks = ms[max(0, len(ms)-maxMarks):]
		return
	}
	if len(ms) == maxMarks {
		if h.array == nil {
			h.array = make([]mark, 2*maxMarks)
		}
		ms = ms[1:]
		if len(ms) == cap(ms) {
			ms = h.array[:copy(h.array, ms)]
		}
	}
	h.marks = append(ms, mark{at, hwm})
}
