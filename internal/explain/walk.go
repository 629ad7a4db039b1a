package explain

import (
	"fmt"

	"github.com/kscope-dev/kscope/internal/event"
)

// walk is Explainer.Run's way through a scan: the slow requests (or the
// one asked for) in file order, each after the requests ahead of it on
// its connection that it may have queued behind.
type walk struct {
	e    *Explainer
	scan *Scan
	read func(pos int64) (*event.Request, error)
	emit func(*Finding) error
	// prev[i] is the previous produce request on cand i's connection, -1
	// for none; explained the cands explained so far.
	prev      []int32
	explained map[int32]bool
}

// maxChain bounds how far back a walk follows a chain of pipelined
// requests.
const maxChain = 16

// previousOnConnection is, for each of the scan's cands, the previous
// produce request on its connection (-1 for none).
func previousOnConnection(scan *Scan) []int32 {
	prev := make([]int32, len(scan.cands))
	lastOn := make([]int32, len(scan.conns))
	for i := range lastOn {
		lastOn[i] = -1
	}
	for i, c := range scan.cands {
		prev[i] = lastOn[c.conn]
		lastOn[c.conn] = int32(i)
	}
	return prev
}

// slow explains every request of limit milliseconds or more.
func (w *walk) slow(limit float64) error {
	for i, c := range w.scan.cands {
		if c.lat >= limit {
			if err := w.explainAt(int32(i), c.pos); err != nil {
				return err
			}
		}
	}
	return nil
}

// only explains the request the scan looked for, whatever its latency.
func (w *walk) only() error {
	scan := w.scan
	if scan.onlyPos < 0 {
		return fmt.Errorf("request %s/%d is not in %s", scan.only.Client, scan.only.CorrelationID, scan.path)
	}
	i := int32(-1)
	for k, c := range scan.cands {
		if c.pos == scan.onlyPos {
			i = int32(k)
		}
	}
	return w.explainAt(i, scan.onlyPos)
}

// explainAt explains the request at pos, cand i (-1: not a cand, which
// explain refuses unless it is an answered produce request), after the
// requests it queued behind, and emits it.
func (w *walk) explainAt(i int32, pos int64) error {
	r, err := w.read(pos)
	if err != nil {
		return err
	}
	if r.APIKey != produceKey || !r.Answered || r.End.IsZero() {
		what := "a " + r.API + " request"
		if !r.Answered {
			what += " without a response"
		}
		return fmt.Errorf("request %s/%d is %s: explain explains answered produce requests", r.Client, r.CorrelationID, what)
	}
	if i >= 0 && r.QueuedMs > 0 {
		if err := w.context(i); err != nil {
			return err
		}
	}
	if i >= 0 {
		w.explained[i] = true
	}
	return w.emit(w.e.Explain(r))
}

// context explains, without counting, the requests before cand i on its
// connection that it may have queued behind, oldest first, so that a
// chain of pipelined requests leads back to the one that was held up (at
// most maxChain back).
func (w *walk) context(i int32) error {
	var chain []int32
	for p := w.prev[i]; p >= 0 && len(chain) < maxChain && !w.explained[p]; p = w.prev[p] {
		chain = append(chain, p)
	}
	for k := len(chain) - 1; k >= 0; k-- {
		r, err := w.read(w.scan.cands[chain[k]].pos)
		if err != nil {
			return err
		}
		w.e.explain(r, false)
		w.explained[chain[k]] = true
	}
	return nil
}
