package event

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
)

// Stream is the JSON Lines stream a kind of event travels in. A
// recording keeps each stream in its own file (recording.WritesFile,
// JournalFile, SchedFile); `kscope iotrace --format json` mixes them on
// standard output. Readers tell the kinds apart by their "kind" field,
// whatever the stream.
type Stream uint8

const (
	// StreamWrites: the broker's write and fsync calls (Write, which has
	// no "kind").
	StreamWrites Stream = iota
	// StreamJournal: what lies under them in the kernel (journal
	// commits, fsyncs, block requests), the broker's kernel waits and
	// the hypervisor's steal.
	StreamJournal
	// StreamSched: the scheduling and JVM evidence (run-queue delays,
	// wake-ups, connections' threads, throttling, JVM pauses).
	StreamSched
)

// Times are what a reader checks of an event's times against a
// recording's window (recording.Window): its start and end and a time in
// milliseconds named Field in its JSON.
type Times struct {
	Start, End time.Time
	Field      string
	Ms         float64
	// Length says Ms is the time from Start to End; otherwise it is
	// some other time, not negative, which may exceed it (steal is
	// accounted up to a tick after the vCPU is back).
	Length bool
	// Instant: the event has one time, Start, named Field; no Ms.
	Instant bool
	// OwnClock: the event comes from a log that may cover hours around
	// the recording (the JVM's, a JFR file): only Ms is checked, not
	// whether the times lie in the window.
	OwnClock bool
}

// Kind is one kind of event of the iotrace streams, of one Go type: the
// "kind" names its lines carry, its stream, and its handler in Handlers.
// Kinds returns them all; a KindOf is the typed one. Readers and writers
// of the streams (recording, ioout) walk Kinds, so a kind added with
// NewKind is written and read back with no other change.
type Kind interface {
	// Names are the "kind" values of its lines; "" for a line without
	// one (a Write).
	Names() []string
	Stream() Stream
	// Reader returns what reads one line of this kind into h's handler:
	// it decodes the line, has check judge the event's times, and passes
	// the event on. Nil when h has no handler for the kind, so that
	// lines nobody wants are not decoded.
	Reader(h *Handlers, check func(Times) error) func(line []byte) error
	// Bind has h pass every event of this kind to fn.
	Bind(h *Handlers, fn func(ev any) error)
	// handle passes ev to h's handler when ev is of this kind.
	handle(h *Handlers, ev any) (isKind bool, err error)
}

// KindOf is a Kind whose events are *T.
type KindOf[T any] struct {
	names  []string
	stream Stream
	times  func(*T) Times
	// field is the kind's named handler in Handlers (the kinds kscope
	// had before kinds were a table); nil: the handler is kept in
	// Handlers.others.
	field func(*Handlers) *func(*T) error
	// reuse: a reader decodes every line into one value, zeroed first
	// (the most numerous kinds, whose handlers copy what they keep).
	reuse bool
}

// kinds is every kind, in the order they were made. It is only appended
// to while packages initialise (NewKind is called from variable
// declarations), and only read after.
var kinds []Kind

// Kinds returns every kind of event of the iotrace streams.
func Kinds() []Kind { return append([]Kind(nil), kinds...) }

// NewKind makes a kind of event *T, carried in stream, whose lines have
// "kind" set to one of names, and whose times are those times returns
// (nil: none are checked). Call it from a package-level variable
// declaration: the table of kinds is not guarded for changes once
// readers run. Events of a kind made here have no named field in
// Handlers: set their handler with On. It panics without a name, or
// when T or one of names has a kind already: events go to their handler
// by type, and lines by name.
func NewKind[T any](stream Stream, times func(*T) Times, names ...string) *KindOf[T] {
	return addKind(&KindOf[T]{names: names, stream: stream, times: times})
}

func addKind[T any](k *KindOf[T]) *KindOf[T] {
	if len(k.names) == 0 {
		panic(fmt.Sprintf("event: a kind of %T without a name", new(T)))
	}
	for _, other := range kinds {
		if _, same := other.(*KindOf[T]); same {
			panic(fmt.Sprintf("event: a second kind of %T", new(T)))
		}
		for _, name := range k.names {
			if slices.Contains(other.Names(), name) {
				panic(fmt.Sprintf("event: a second kind named %q", name))
			}
		}
	}
	kinds = append(kinds, k)
	return k
}

// Names are the "kind" values of its lines.
func (k *KindOf[T]) Names() []string { return append([]string(nil), k.names...) }

// Stream is the stream its events travel in.
func (k *KindOf[T]) Stream() Stream { return k.stream }

// Handler is h's handler for this kind; nil when it has none.
func (k *KindOf[T]) Handler(h *Handlers) func(*T) error {
	if k.field != nil {
		return *k.field(h)
	}
	fn := h.others[k]
	if fn == nil {
		return nil
	}
	return func(v *T) error { return fn(v) }
}

// On sets h's handler for this kind (nil: drop its events).
func (k *KindOf[T]) On(h *Handlers, fn func(*T) error) {
	if k.field != nil {
		*k.field(h) = fn
		return
	}
	if fn == nil {
		delete(h.others, k)
		return
	}
	if h.others == nil {
		h.others = map[Kind]func(any) error{}
	}
	h.others[k] = func(v any) error { return fn(v.(*T)) }
}

// Bind has h pass every event of this kind to fn.
func (k *KindOf[T]) Bind(h *Handlers, fn func(ev any) error) {
	k.On(h, func(v *T) error { return fn(v) })
}

func (k *KindOf[T]) handle(h *Handlers, ev any) (bool, error) {
	v, ok := ev.(*T)
	if !ok {
		return false, nil
	}
	if fn := k.Handler(h); fn != nil {
		return true, fn(v)
	}
	return true, nil
}

// Reader returns what reads one line of this kind into h's handler; nil
// when h has none.
func (k *KindOf[T]) Reader(h *Handlers, check func(Times) error) func(line []byte) error {
	fn := k.Handler(h)
	if fn == nil {
		return nil
	}
	var reused T
	return func(line []byte) error {
		v := &reused
		if k.reuse {
			var zero T
			reused = zero
		} else {
			v = new(T)
		}
		if err := json.Unmarshal(line, v); err != nil {
			return err
		}
		if k.times != nil {
			if err := check(k.times(v)); err != nil {
				return err
			}
		}
		return fn(v)
	}
}

// Handlers receive events, one handler per kind; a nil handler drops
// its kind. The tracer (iotrace.RunAll) delivers live events to them,
// recording.Reader.ReadIO recorded ones, and a recording.Writer's
// Handlers write them. The named fields are the kinds kscope had when
// kinds became a table; a kind made with NewKind has its handler set
// with its On. Copies of a Handlers share those handlers.
type Handlers struct {
	Write  func(*Write) error         // system calls on log files
	Commit func(*JournalCommit) error // jbd2 commits, ext4 fast commits, XFS iclog writes
	Sync   func(*FileSync) error      // ext4 fsyncs
	Block  func(*BlockIO) error       // block requests
	Wait   func(*KernelWait) error    // uninterruptible sleeps
	Steal  func(*CPUSteal) error      // hypervisor steal
	// The scheduling and JVM evidence: run-queue delays, wake-ups,
	// connections' threads (the tracer), cgroup throttling (a sampler),
	// JVM pauses (the JVM's log).
	RunDelay   func(*RunDelay) error
	Wakeup     func(*Wakeup) error
	ConnThread func(*ConnThread) error
	Throttle   func(*CPUThrottle) error
	JVMPause   func(*JVMPause) error

	others map[Kind]func(any) error
}

// Handle passes ev, an event of any kind (*Write, *RunDelay, ...), to its
// handler; an event without one, or of no kind, is left out.
func (h Handlers) Handle(ev any) error {
	for _, k := range kinds {
		if isKind, err := k.handle(&h, ev); isKind {
			return err
		}
	}
	return nil
}

// The kinds kscope has, each with its field of Handlers.
var (
	Writes = addKind(&KindOf[Write]{stream: StreamWrites, names: []string{""}, reuse: true,
		field: func(h *Handlers) *func(*Write) error { return &h.Write },
		times: func(w *Write) Times { return span("latency_ms", w.Start, w.End, w.LatencyMs) }})
	Commits = addKind(&KindOf[JournalCommit]{stream: StreamJournal, names: []string{KindJBD2Commit, KindXlogWrite, KindExt4FastCommit}, reuse: true,
		field: func(h *Handlers) *func(*JournalCommit) error { return &h.Commit },
		times: func(c *JournalCommit) Times { return span("latency_ms", c.Start, c.End, c.LatencyMs) }})
	Syncs = addKind(&KindOf[FileSync]{stream: StreamJournal, names: []string{KindExt4Fsync}, reuse: true,
		field: func(h *Handlers) *func(*FileSync) error { return &h.Sync },
		times: func(s *FileSync) Times { return span("latency_ms", s.Start, s.End, s.LatencyMs) }})
	Blocks = addKind(&KindOf[BlockIO]{stream: StreamJournal, names: []string{KindBlockIO}, reuse: true,
		field: func(h *Handlers) *func(*BlockIO) error { return &h.Block },
		times: func(b *BlockIO) Times { return span("latency_ms", b.Start, b.End, b.LatencyMs) }})
	KernelWaits = addKind(&KindOf[KernelWait]{stream: StreamJournal, names: []string{KindKernelWait}, reuse: true,
		field: func(h *Handlers) *func(*KernelWait) error { return &h.Wait },
		times: func(k *KernelWait) Times { return span("latency_ms", k.Start, k.End, k.LatencyMs) }})
	Steals = addKind(&KindOf[CPUSteal]{stream: StreamJournal, names: []string{KindCPUSteal},
		field: func(h *Handlers) *func(*CPUSteal) error { return &h.Steal },
		times: func(s *CPUSteal) Times {
			// Accounted up to a tick after the vCPU is back: it
			// may be longer than its interval.
			return Times{Field: "stolen_ms", Start: s.Start, End: s.End, Ms: s.StolenMs}
		}})
	RunDelays = addKind(&KindOf[RunDelay]{stream: StreamSched, names: []string{KindRunDelay},
		field: func(h *Handlers) *func(*RunDelay) error { return &h.RunDelay },
		times: func(r *RunDelay) Times { return span("latency_ms", r.Start, r.End, r.LatencyMs) }})
	Wakeups = addKind(&KindOf[Wakeup]{stream: StreamSched, names: []string{KindWakeup},
		field: func(h *Handlers) *func(*Wakeup) error { return &h.Wakeup },
		times: func(u *Wakeup) Times { return span("slept_ms", u.Start, u.End, u.SleptMs) }})
	ConnThreads = addKind(&KindOf[ConnThread]{stream: StreamSched, names: []string{KindConnThread},
		field: func(h *Handlers) *func(*ConnThread) error { return &h.ConnThread },
		times: func(c *ConnThread) Times { return Times{Field: "time", Start: c.Time, Instant: true} }})
	Throttles = addKind(&KindOf[CPUThrottle]{stream: StreamSched, names: []string{KindCPUThrottle},
		field: func(h *Handlers) *func(*CPUThrottle) error { return &h.Throttle },
		times: func(t *CPUThrottle) Times {
			return Times{Field: "throttled_ms", Start: t.Start, End: t.End, Ms: t.ThrottledMs}
		}})
	JVMPauses = addKind(&KindOf[JVMPause]{stream: StreamSched, names: []string{KindJVMPause},
		field: func(h *Handlers) *func(*JVMPause) error { return &h.JVMPause },
		times: func(p *JVMPause) Times {
			t := span("latency_ms", p.Start, p.End, p.LatencyMs)
			t.OwnClock = true
			return t
		}})
)

// span is the Times of an event that lasts ms, named field, from start
// to end.
func span(field string, start, end time.Time, ms float64) Times {
	return Times{Field: field, Start: start, End: end, Ms: ms, Length: true}
}
