package iotrace

import (
	"errors"
	"io"
	"slices"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"

	"github.com/kscope-dev/kscope/internal/event"
)

// subtracer is an optional part of a Tracer with its own BPF programs
// (system calls at fentry, and each of sources): opened by Open after
// the system calls, read by RunAll, counted by Stats, listed by
// ProgramIDs, detached and closed with the Tracer.
type subtracer interface {
	// ring is its ring buffer, nil when it sends no events of its own.
	ring() *ringbuf.Reader
	// read reads ring until it is flushed or closed, passing events to
	// h through deliver.
	read(t *Tracer, h Handlers, deliver *delivery) error
	// counters adds its events read and its kernel-side counters
	// (losses) to s.
	counters(s *Stats) error
	programs() []*ebpf.Program
	detach() error
	close() error
}

// source is one optional part of a Tracer, in the table sources. A new
// one is a file with its subtracer (its BPF programs loaded, attached,
// read, counted, closed) and an entry here, with the Config, Stats and
// Mode fields it needs.
type source struct {
	name string
	// wanted says whether cfg asks for it.
	wanted func(cfg *Config) bool
	// open loads and attaches its programs (devs are the devices of the
	// log directories) and notes in t.mode what it does. A nil
	// subtracer without an error: it was not opened, and t.mode says
	// why (steal with Config.StealOptional).
	open func(t *Tracer, cfg *Config, devs []uint32) (subtracer, error)
	// kinds are the kinds of event it sends (event.Kinds).
	kinds []event.Kind
	// describe is what Mode.String says of it; nil: nothing.
	describe func(m Mode) string
}

// sources are the optional parts of a Tracer, in the order Open opens
// them and Mode.String describes them.
var sources = []source{
	{name: "file system functions", wanted: func(c *Config) bool { return c.Functions != FunctionsOff },
		open: openFunctionSource, kinds: []event.Kind{event.Writes}},
	{name: "journal", wanted: func(c *Config) bool { return c.Journal },
		open: openJournalSource, kinds: []event.Kind{event.Commits, event.Syncs, event.Blocks}},
	{name: "waits", wanted: func(c *Config) bool { return c.Waits },
		open: openWaitSource, kinds: []event.Kind{event.KernelWaits}},
	{name: "steal", wanted: func(c *Config) bool { return c.Steal },
		open: openStealSource, kinds: []event.Kind{event.Steals}, describe: Mode.stealString},
	{name: "run queue", wanted: func(c *Config) bool { return c.RunQueue },
		open: openRunqSource, kinds: []event.Kind{event.RunDelays, event.Wakeups}, describe: Mode.runQueueString},
	{name: "connections", wanted: func(c *Config) bool { return c.Conns },
		open: openConnSource, kinds: []event.Kind{event.ConnThreads}, describe: Mode.connsString},
	{name: "page cache", wanted: func(c *Config) bool { return c.PageCache },
		open: openPageCacheSource, kinds: []event.Kind{event.PageCacheAddsKind}, describe: Mode.pageCacheString},
}

// Kinds are the kinds of event a Tracer may send: writes, and those of
// every source.
func Kinds() []event.Kind {
	kinds := []event.Kind{event.Writes}
	for _, src := range sources {
		for _, k := range src.kinds {
			if !slices.Contains(kinds, k) {
				kinds = append(kinds, k)
			}
		}
	}
	return kinds
}

// openSources opens the sources cfg asks for, after the system calls'
// programs (t.objs) are loaded: each is kept in t.subs, so that Close
// releases what was opened even when a later one fails.
func (t *Tracer) openSources(cfg *Config, devs []uint32) error {
	for _, src := range sources {
		if !src.wanted(cfg) {
			continue
		}
		s, err := src.open(t, cfg, devs)
		if err != nil {
			return err
		}
		if s != nil {
			t.subs = append(t.subs, s)
		}
	}
	return nil
}

// attachment is what a subtracer holds of the kernel once loaded: the
// links of its programs and the reader of its ring. Detaching, closing
// and the ring are the same for every subtracer.
type attachment struct {
	links []link.Link
	rd    *ringbuf.Reader
}

// add keeps l, the result of attaching a program, unless err.
func (a *attachment) add(l link.Link, err error) error {
	if err == nil {
		a.links = append(a.links, l)
	}
	return err
}

func (a *attachment) ring() *ringbuf.Reader { return a.rd }

func (a *attachment) detach() error {
	var errs []error
	for _, l := range a.links {
		errs = append(errs, l.Close())
	}
	a.links = nil
	return errors.Join(errs...)
}

// closeWith detaches, closes the ring's reader, then objs: the programs
// and maps loaded.
func (a *attachment) closeWith(objs io.Closer) error {
	errs := []error{a.detach()}
	if a.rd != nil {
		errs = append(errs, a.rd.Close())
	}
	errs = append(errs, objs.Close())
	return errors.Join(errs...)
}
