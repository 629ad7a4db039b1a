package slowdisk

import (
	"context"
	"math/rand/v2"
	"sync"
	"time"
)

// holder holds each request for a latency drawn from the profile: a
// device with a queue, where up to MaxInflight requests are in service at
// once and each takes its own draw, overlapping the others.
type holder struct {
	profile Profile
	slots   chan struct{} // a token per request in service
	stop    chan struct{} // closed by release: hold no more
	stopped sync.Once

	mu    sync.Mutex
	rngs  [numOps]*rand.Rand // one stream per kind, from the seed
	stats Stats
}

// Stats counts the requests the emulator served, by kind: how many, and
// how long they were held in all (from service start: the queue wait
// for a slot not included), and how many were served unheld because
// the device was closing or the kernel interrupted them.
type Stats struct {
	Requests [numOps]uint64
	Held     [numOps]time.Duration
	Unheld   uint64
}

func newHolder(p Profile, seed uint64) *holder {
	depth := p.MaxInflight
	if depth == 0 {
		depth = DefaultMaxInflight
	}
	h := &holder{profile: p, slots: make(chan struct{}, depth), stop: make(chan struct{})}
	for op := range numOps {
		h.rngs[op] = rand.New(rand.NewPCG(seed, uint64(op)))
	}
	return h
}

// draw is the next latency of op. The draws of one kind come in the
// order the requests arrive: with a fixed seed, the same sequence of
// latencies, whichever requests they fall on.
func (h *holder) draw(op Op) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.Requests[op]++
	return h.profile.Dist(op).Draw(h.rngs[op])
}

func (h *holder) count(op Op, held time.Duration, unheld bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stats.Held[op] += held
	if unheld {
		h.stats.Unheld++
	}
}

func (h *holder) snapshot() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stats
}

// do runs io (the real read or write of the image) as a request of kind
// op: it waits for a free slot, then returns no sooner than the drawn
// latency after its service began (io's own time counts in it). ctx
// (the kernel's interrupt of the request) and release end the wait
// early.
func (h *holder) do(ctx context.Context, op Op, io func()) {
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	case <-ctx.Done():
		io()
		h.count(op, 0, true)
		return
	case <-h.stop:
		io()
		h.count(op, 0, true)
		return
	}
	start := time.Now()
	lat := h.draw(op)
	io()
	defer func() { h.count(op, time.Since(start), false) }()
	wait := time.Until(start.Add(lat))
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-h.stop:
	}
}

// release ends every hold now and for good: requests are served at the
// image's own speed, so that a teardown is not slowed by the profile.
func (h *holder) release() { h.stopped.Do(func() { close(h.stop) }) }
