package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// consumer is one member of the run's consumer group.
type consumer struct {
	r  *run
	id int
	cl *kgo.Client
	// rec is set when the load starts; the poll loop owns it, finish
	// reads it after the loop ended.
	rec      atomic.Pointer[recorder]
	assigned atomic.Int64
	consumed atomic.Int64 // for the progress line
	errors   atomic.Int64 // fetch errors
	e2e      []int64      // reused per poll
}

// startConsumers starts the group and waits (up to ConnectTimeout) until
// its members hold every partition, so the load does not begin during the
// group's first rebalances. The group is new for every run and starts
// from the first offset whose timestamp is at or after the run's start,
// so no message of the run is missed even if the assignment comes late,
// and records of earlier runs are skipped (and told apart by their id
// anyway).
func (r *run) startConsumers(ctx context.Context) error {
	s := &r.s
	if s.Consumers == 0 {
		return nil
	}
	group := fmt.Sprintf("kscope-bench-%08x", r.id)
	startMs := time.Unix(0, r.clk.now()).UnixMilli() - 1
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.cancelC = cancel
	for i := 0; i < s.Consumers; i++ {
		c := &consumer{r: r, id: i}
		cl, err := kgo.NewClient(
			kgo.SeedBrokers(s.Bootstrap...),
			kgo.ClientID(fmt.Sprintf("kscope-bench-c%d", i)),
			kgo.ConsumerGroup(group),
			kgo.ConsumeTopics(r.topics...),
			kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(startMs)),
			kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { c.assigned.Add(count(m)) }),
			kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { c.assigned.Add(-count(m)) }),
			kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) { c.assigned.Add(-count(m)) }),
			kgo.WithHooks(&r.requests),
		)
		if err != nil {
			return fmt.Errorf("bench: consumer client: %w", err)
		}
		c.cl = cl
		r.consumers = append(r.consumers, c)
	}
	for _, c := range r.consumers {
		r.consumeWG.Add(1)
		go func() { defer r.consumeWG.Done(); c.loop(pctx) }()
	}
	deadline := time.Now().Add(s.ConnectTimeout)
	for {
		var total int64
		each := true
		for _, c := range r.consumers {
			n := c.assigned.Load()
			total += n
			each = each && n > 0
		}
		if total == int64(r.partitions) && (each || s.Consumers > r.partitions) {
			fmt.Fprintf(r.out, "bench: consumer group %s holds all %d partitions\n", group, r.partitions)
			return nil
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(r.out, "bench: consumer group %s holds %d of %d partitions after %v; starting anyway (no message is missed)\n",
				group, total, r.partitions, s.ConnectTimeout)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func count(m map[string][]int32) int64 {
	var n int64
	for _, ps := range m {
		n += int64(len(ps))
	}
	return n
}

// loop polls until ctx is cancelled. Each record's id goes to the ledger;
// its end-to-end latency is the time the poll returned minus the send
// timestamp in its header.
func (c *consumer) loop(ctx context.Context) {
	r := c.r
	l := r.ledger
	for {
		fs := c.cl.PollFetches(ctx)
		if ctx.Err() != nil || fs.IsClientClosed() {
			return
		}
		now := r.clk.now()
		var errs int64
		fs.EachError(func(_ string, _ int32, err error) {
			if ctx.Err() == nil {
				errs++
			}
		})
		c.e2e = c.e2e[:0]
		n := int64(0)
		l.mu.Lock()
		fs.EachRecord(func(rec *kgo.Record) {
			var idb, tsb []byte
			for _, h := range rec.Headers {
				switch h.Key {
				case idHeader:
					idb = h.Value
				case tsHeader:
					tsb = h.Value
				}
			}
			id, ok := parseID(idb)
			if !ok {
				l.foreign++
				return
			}
			if !l.see(id, r.id) {
				return
			}
			n++
			if id.flags&flagMeasured != 0 && len(tsb) == 8 {
				c.e2e = append(c.e2e, now-int64(binary.BigEndian.Uint64(tsb)))
			}
		})
		l.mu.Unlock()
		if rec := c.rec.Load(); rec != nil { // nil until the load starts
			for _, d := range c.e2e {
				rec.latency(sEndToEnd, now, d)
			}
			if a := rec.at(now); a != nil {
				a.consumed += n
				a.errors += errs
			}
		}
		c.consumed.Add(n)
		c.errors.Add(errs)
	}
}

// awaitConsumers waits up to d until the consumers have seen every
// acknowledged message, printing how many are left once a second.
func (r *run) awaitConsumers(ctx context.Context, d time.Duration) {
	if len(r.consumers) == 0 {
		return
	}
	acked := make([]bitset, len(r.producers))
	sent := make([]uint64, len(r.producers))
	for i, p := range r.producers {
		p.mu.Lock()
		acked[i], sent[i] = p.acked, p.sent
		p.mu.Unlock()
	}
	const batch = 1 << 16
	timeout := r.drainTimer(ctx, d)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	lastNote := time.Now()
	left, ids := r.ledger.missing(acked, sent, batch)
	for left > 0 {
		select {
		case <-timeout:
			fmt.Fprintf(r.out, "bench: %d acknowledged messages not consumed when the drain ended\n", left)
			return
		case <-tick.C:
		}
		if time.Since(lastNote) >= time.Second {
			fmt.Fprintf(r.out, "bench: draining: %d acknowledged messages not consumed yet\n", left)
			lastNote = time.Now()
		}
		before := len(ids)
		ids = r.ledger.stillMissing(ids)
		left -= int64(before - len(ids))
		if len(ids) == 0 && left > 0 {
			left, ids = r.ledger.missing(acked, sent, batch)
		}
	}
}

// closeConsumers stops the poll loops and closes the clients (leaving the
// group).
func (r *run) closeConsumers() {
	if r.cancelC != nil {
		r.cancelC()
	}
	r.consumeWG.Wait()
	done := make(chan struct{})
	go func() {
		for _, c := range r.consumers {
			c.cl.Close()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintf(r.out, "bench: consumers did not close within 10 s\n")
	}
}
