package iotrace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/kscope-dev/kscope/internal/event"
)

// pageCache is bpf/iopcache.bpf.c loaded and attached: the runs of pages
// the broker's threads add to the page cache (reads from disk).
type pageCache struct {
	objs iopcacheObjects
	attachment
	// events counts the runs read (Stats.PageCacheEvents).
	events atomic.Uint64
}

// pageCacheGap ends a thread's run of adds to one file: a millisecond
// without one.
const pageCacheGap = time.Millisecond

// errNoPageCacheTracepoint: the kernel has no
// filemap:mm_filemap_add_to_page_cache (before 4.14), or tracefs does not
// show it.
var errNoPageCacheTracepoint = errors.New("no tracepoint filemap:mm_filemap_add_to_page_cache")

// openPageCacheSource is the page cache's entry of sources: where the
// kernel lacks the tracepoint, or refuses the program, Open goes on
// without it and Mode says why (reads are then said to come from disk
// only from the waits).
func openPageCacheSource(t *Tracer, cfg *Config, _ []uint32) (subtracer, error) {
	p, err := openPageCache(tracefsEvents, cfg.PID, cfg.ringFlags())
	if err != nil {
		t.mode.PageCacheErr = err
		return nil, nil
	}
	t.mode.PageCache = true
	return p, nil
}

func openPageCache(events string, pid int, ringFlags uint64) (_ *pageCache, err error) {
	fields := []tpField{{"i_ino", 16, 8}, {"s_dev", 32, 4}}
	if err := checkFormat(events, "filemap", "mm_filemap_add_to_page_cache", fields); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("iotrace: page cache: %w", errNoPageCacheTracepoint)
		}
		return nil, fmt.Errorf("iotrace: page cache: %w", err)
	}
	// The folio's order came with large folios (5.18); without it each
	// add is one page.
	hasOrder := checkFormat(events, "filemap", "mm_filemap_add_to_page_cache", []tpField{{"order", 36, 1}}) == nil
	spec, err := loadIopcache()
	if err != nil {
		return nil, fmt.Errorf("iotrace: page cache: %w", err)
	}
	if err := setRingFlags(spec, ringFlags); err != nil {
		return nil, fmt.Errorf("iotrace: page cache: %w", err)
	}
	for name, v := range map[string]any{"targ_tgid": uint32(pid), "gap_ns": uint64(pageCacheGap), "has_order": boolU32(hasOrder)} {
		if err := spec.Variables[name].Set(v); err != nil {
			return nil, fmt.Errorf("iotrace: page cache: set %s: %w", name, err)
		}
	}
	p := &pageCache{}
	if err := loadObjects(spec, &p.objs, "iotrace: page cache"); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			p.close()
		}
	}()
	if err = p.add(link.Tracepoint("filemap", "mm_filemap_add_to_page_cache", p.objs.KsioPcacheAdd, nil)); err != nil {
		return nil, fmt.Errorf("iotrace: attach to tracepoint filemap:mm_filemap_add_to_page_cache: %w", err)
	}
	if p.rd, err = ringbuf.NewReader(p.objs.KsioPevents); err != nil {
		return nil, fmt.Errorf("iotrace: page cache ring buffer reader: %w", err)
	}
	return p, nil
}

func boolU32(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

func (p *pageCache) close() error { return p.closeWith(&p.objs) }

const pageCacheEventSize = 40

func decodePageCacheEvent(b []byte) (iopcacheIopcacheEvent, bool) {
	var ev iopcacheIopcacheEvent
	if len(b) < pageCacheEventSize {
		return ev, false
	}
	ev.StartNs = binary.LittleEndian.Uint64(b[0:])
	ev.EndNs = binary.LittleEndian.Uint64(b[8:])
	ev.Ino = binary.LittleEndian.Uint64(b[16:])
	ev.Pages = binary.LittleEndian.Uint64(b[24:])
	ev.Tid = binary.LittleEndian.Uint32(b[32:])
	ev.Dev = binary.LittleEndian.Uint32(b[36:])
	return ev, true
}

func (p *pageCache) counters(st *Stats) error {
	st.PageCacheEvents += p.events.Load()
	return sumCounters(p.objs.KsioPcounters, &st.PageCacheAdds, &st.PageCacheRingbufDrops, &st.PageCacheRunsFull)
}

func (p *pageCache) programs() []*ebpf.Program { return []*ebpf.Program{p.objs.KsioPcacheAdd} }

// read passes the runs of the ring, then, once it is flushed (the
// program detached), the runs still open in the map.
func (p *pageCache) read(t *Tracer, h Handlers, deliver *delivery) error {
	pass := func(ev iopcacheIopcacheEvent) error {
		p.events.Add(1)
		fn := event.PageCacheAddsKind.Handler(&h)
		if fn == nil {
			return nil
		}
		run := &event.PageCacheAdds{Kind: event.KindPageCacheAdds, Start: t.clock.wall(ev.StartNs), End: t.clock.wall(ev.EndNs),
			TID: int(ev.Tid), Thread: t.threads.name(int(ev.Tid)), Dev: devString(ev.Dev), Inode: ev.Ino, Pages: int64(ev.Pages)}
		return deliver.do(func() error { return fn(run) })
	}
	err := t.readPolled(p.rd, func(b []byte) error {
		ev, ok := decodePageCacheEvent(b)
		if !ok {
			return fmt.Errorf("iotrace: page cache ring buffer sample of %d bytes, want %d", len(b), pageCacheEventSize)
		}
		return pass(ev)
	})
	if err != nil || len(p.links) > 0 {
		return err
	}
	return p.drainRuns(pass)
}

// drainRuns passes the runs left in the map, in no order.
func (p *pageCache) drainRuns(pass func(iopcacheIopcacheEvent) error) error {
	var (
		tid uint32
		ev  iopcacheIopcacheEvent
	)
	it := p.objs.KsioPruns.Iterate()
	for it.Next(&tid, &ev) {
		if err := pass(ev); err != nil {
			return err
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("iotrace: page cache runs: %w", err)
	}
	return nil
}
