package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"
)

// cause is one reason a produce request can be slow. Each lives in its
// own file, which registers it from an init function (see the package
// doc): explain measures every registered cause on every slow request,
// names the one that accounts for the request's latency, and lists them
// all in the summary and in each finding's shares.
type cause struct {
	// name is the cause as findings and the summary name it
	// ("cpu-starved"); its share in a finding's JSON is name_ms, with
	// dashes as underscores.
	name string
	// order is its place among the causes: of two that account for as
	// much, the earlier names the request, and the summary lists them in
	// this order. Distinct for every cause.
	order int
	// short names it in the shares an unexplained finding's detail
	// lists ("cpu").
	short string
	// help says what it means, for kscope explain --help (CauseHelp):
	// lines of at most 60 characters.
	help string
	// stopsTheWorld marks a cause that stops every thread of the broker
	// (steal, the JVM's pauses): when it alone accounts for most of the
	// latency it names the request before any other, since whatever a
	// stopped thread was doing only looks slow (classify).
	stopsTheWorld bool
	// after names the causes whose measures this one's measure reads:
	// they are measured first. A cause reads no other's.
	after []string
	// measure measures what of the request's latency the cause accounts
	// for, as time placed in the request when it can (ivs), and adds its
	// evidence to the finding (m.f).
	measure func(m *measuring) measured
	// inherited: a request queued on its connection behind one this
	// cause held up was held up by it too, for the part of its wait the
	// request ahead was held (measure finds that time in m.queued, and
	// what the cause measured of the request ahead in m.ahead). A
	// finding it names then says which request it queued behind.
	inherited bool
	// named, when set, completes a finding the cause names: evidence
	// worth gathering only then.
	named func(m *measuring, own measured)
	// detail is the sentence telling what the evidence of a finding the
	// cause names shows; "" when it has nothing to tell, and the finding
	// then lists every cause's share instead.
	detail func(f *Finding) string
}

// causes are the registered causes; register fills it from the cause
// files' init functions. Init functions rather than a list of the causes
// in one file: that list would be one more file to edit for each new
// cause, the edit this registry is here to spare. Go runs them in file
// name order, so the registration order means nothing: registered sorts
// the causes by order, and for measuring (dependencies first), afresh
// after each registration. Tests register causes of their own the same
// way (registry_test.go).
var causes registry

type registry struct {
	mu     sync.Mutex
	all    []*cause
	sorted *causeSet // nil after a change
}

// causeSet is the registered causes as explain uses them: by order, by
// name, and in the order they are measured.
type causeSet struct {
	byOrder []*cause
	index   map[string]int // name → position in byOrder
	// measureOrder lists positions in byOrder: every cause after those
	// it reads.
	measureOrder []int
}

// register adds c to the causes. It panics on a cause without a name or
// measure, or that repeats another's name or order: a programming error
// that any test of the package shows.
func register(c cause) {
	switch {
	case c.name == "" || c.measure == nil:
		panic(fmt.Sprintf("explain: cause %q registered without a name or a measure", c.name))
	case c.name == CauseUnexplained:
		panic("explain: " + CauseUnexplained + " is the verdict when no cause accounts for a request, not a cause")
	}
	causes.mu.Lock()
	defer causes.mu.Unlock()
	for _, o := range causes.all {
		if o.name == c.name || o.order == c.order {
			panic(fmt.Sprintf("explain: cause %q (order %d) registered again, or at %q's order", c.name, c.order, o.name))
		}
	}
	causes.all = append(causes.all, &c)
	causes.sorted = nil
}

// deregister removes the cause named name: for tests that register a
// cause of their own.
func deregister(name string) {
	causes.mu.Lock()
	defer causes.mu.Unlock()
	causes.all = slices.DeleteFunc(causes.all, func(c *cause) bool { return c.name == name })
	causes.sorted = nil
}

// registered returns the causes as they stand. It panics when a cause
// reads one that is not registered, or causes read each other in a
// circle: programming errors, like those register panics on.
func registered() *causeSet {
	causes.mu.Lock()
	defer causes.mu.Unlock()
	if causes.sorted == nil {
		set, err := sortCauses(causes.all)
		if err != nil {
			panic("explain: " + err.Error())
		}
		causes.sorted = set
	}
	return causes.sorted
}

// sortCauses orders the causes: by order, and for measuring each after
// the causes it reads (of those ready, the earliest in order first, so
// that the measure order is the same on every run).
func sortCauses(all []*cause) (*causeSet, error) {
	s := &causeSet{byOrder: slices.Clone(all), index: make(map[string]int, len(all))}
	slices.SortFunc(s.byOrder, func(a, b *cause) int { return cmp.Compare(a.order, b.order) })
	for i, c := range s.byOrder {
		s.index[c.name] = i
	}
	waiting := make([]int, len(s.byOrder)) // causes each still waits for
	readBy := make([][]int, len(s.byOrder))
	for i, c := range s.byOrder {
		for _, dep := range c.after {
			j, ok := s.index[dep]
			if !ok {
				return nil, fmt.Errorf("cause %q reads %q, which is not registered", c.name, dep)
			}
			waiting[i]++
			readBy[j] = append(readBy[j], i)
		}
	}
	done := make([]bool, len(s.byOrder))
	for len(s.measureOrder) < len(s.byOrder) {
		next := -1
		for i := range s.byOrder {
			if !done[i] && waiting[i] == 0 {
				next = i
				break
			}
		}
		if next < 0 {
			return nil, fmt.Errorf("causes read each other in a circle: %s", strings.Join(s.unmeasured(done), ", "))
		}
		done[next] = true
		s.measureOrder = append(s.measureOrder, next)
		for _, k := range readBy[next] {
			waiting[k]--
		}
	}
	return s, nil
}

// unmeasured names the causes not done.
func (s *causeSet) unmeasured(done []bool) []string {
	var names []string
	for i, c := range s.byOrder {
		if !done[i] {
			names = append(names, c.name)
		}
	}
	return names
}

// named is the cause called name, nil for none (unexplained).
func (s *causeSet) named(name string) *cause {
	if i, ok := s.index[name]; ok {
		return s.byOrder[i]
	}
	return nil
}

// position is where the cause called name stands in order, -1 for none.
func (s *causeSet) position(name string) int {
	if i, ok := s.index[name]; ok {
		return i
	}
	return -1
}

// inOrder lists the causes named in first, in that order, then the
// others by order: where an order of the past must hold (the shares'
// JSON keys and the unexplained detail were written out by hand before
// the causes were registered, and recordings, tests and users read
// them), while new causes simply follow.
func (s *causeSet) inOrder(first []string) []*cause {
	out := make([]*cause, 0, len(s.byOrder))
	for _, name := range first {
		if c := s.named(name); c != nil {
			out = append(out, c)
		}
	}
	for _, c := range s.byOrder {
		if !slices.Contains(first, c.name) {
			out = append(out, c)
		}
	}
	return out
}

// Causes lists the causes explain names, in the order ties between them
// are broken, then CauseUnexplained.
func Causes() []string {
	s := registered()
	names := make([]string, 0, len(s.byOrder)+1)
	for _, c := range s.byOrder {
		names = append(names, c.name)
	}
	return append(names, CauseUnexplained)
}

// CauseHelp describes each cause for kscope explain --help, one after
// the other in order: the name, then what it means, lines indented by
// indent and the meaning in a column width characters further in.
func CauseHelp(indent string, width int) string {
	var b strings.Builder
	pad := strings.Repeat(" ", width)
	for _, c := range registered().byOrder {
		b.WriteString(indent + c.name)
		if len(c.name) < width {
			b.WriteString(pad[len(c.name):])
		} else {
			b.WriteString("\n" + indent + pad)
		}
		b.WriteString(strings.ReplaceAll(c.help, "\n", "\n"+indent+pad) + "\n")
	}
	return b.String()
}

// CauseMeaning is what cause means, in one line (CauseHelp's text
// without its line breaks); "" for a name explain does not give.
func CauseMeaning(cause string) string {
	if cause == CauseUnexplained {
		return "no cause kscope measures accounts for most of their latency"
	}
	c := registered().named(cause)
	if c == nil {
		return ""
	}
	return strings.Join(strings.Fields(c.help), " ")
}
