package clients

import "github.com/HdrHistogram/hdrhistogram-go"

// runs is a distribution recorded into an HdrHistogram a run of equal
// values at a time. A client's requests mostly repeat their shape (one
// batch, one partition, the same records per batch), and recording each
// touched the histogram's counts, tens of KiB, for every request: a cache
// miss the agent paid per request.
type runs struct {
	h    *hdrhistogram.Histogram
	v, n int64
}

func newRuns() *runs { return &runs{h: newHist()} }

// record counts n values v.
func (r *runs) record(v, n int64) {
	if n <= 0 {
		return
	}
	if r.n > 0 && v == r.v {
		r.n += n
		return
	}
	r.flush()
	r.v, r.n = v, n
}

func (r *runs) flush() {
	if r.n > 0 {
		_ = r.h.RecordValues(r.v, r.n)
		r.n = 0
	}
}

// histogram is the distribution of every value recorded.
func (r *runs) histogram() *hdrhistogram.Histogram {
	r.flush()
	return r.h
}
