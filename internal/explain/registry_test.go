package explain

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

// The test-only cause, test-stall, is what a new cause looks like: this
// file is all of it (name, order, measure, detail). The tests here and in
// registry_ext_test.go register it and see it reach every output.
const (
	CauseTestStall = "test-stall"
	// TestStallClient is the client id of the requests test-stall holds:
	// it accounts for 90% of their latency.
	TestStallClient = "held-by-test"
)

func testStallCause() cause {
	return cause{
		name:  CauseTestStall,
		order: 125, // between safepoint and cpu-steal
		short: "test",
		help:  "a test held it (registered by tests only)",
		measure: func(m *measuring) measured {
			if m.r.ClientID != TestStallClient {
				return measured{}
			}
			held := m.L * 9 / 10
			return measured{ns: held, ivs: []interval{{m.A, m.A + held}}}
		},
		detail: func(f *Finding) string { return fmt.Sprintf("the test held it %.1f ms", f.Shares[CauseTestStall]) },
	}
}

// RegisterTestCause registers test-stall until t ends.
func RegisterTestCause(t testing.TB) {
	t.Helper()
	register(testStallCause())
	t.Cleanup(func() { deregister(CauseTestStall) })
}

func TestCausesInOrder(t *testing.T) {
	want := []string{CauseSlowWrite, CauseLockWait, CauseReplication, CauseThrottle, CauseResponseSend, CauseNetwork, CauseDiskRead,
		CauseNetworkThreadBlocked, CauseCPUStarved, CauseParkWait, CauseRequestQueue, CauseGCPause, CauseSafepoint, CauseCPUSteal, CauseUnexplained}
	if got := Causes(); !slices.Equal(got, want) {
		t.Errorf("causes %v, want %v", got, want)
	}
	RegisterTestCause(t)
	want = slices.Insert(want, len(want)-2, CauseTestStall)
	if got := Causes(); !slices.Equal(got, want) {
		t.Errorf("with test-stall: causes %v, want %v", got, want)
	}
}

// TestMeasureOrder: every registered cause is measured once, after the
// causes it reads.
func TestMeasureOrder(t *testing.T) {
	s := registered()
	if len(s.measureOrder) != len(s.byOrder) {
		t.Fatalf("%d causes measured of %d", len(s.measureOrder), len(s.byOrder))
	}
	at := make(map[string]int)
	for k, i := range s.measureOrder {
		at[s.byOrder[i].name] = k
	}
	for _, c := range s.byOrder {
		for _, dep := range c.after {
			if at[dep] >= at[c.name] {
				t.Errorf("%s is measured at %d, before %s (%d), which it reads", c.name, at[c.name], dep, at[dep])
			}
		}
	}
}

func TestSortCauses(t *testing.T) {
	c := func(name string, order int, after ...string) *cause {
		return &cause{name: name, order: order, after: after}
	}
	tests := []struct {
		name    string
		causes  []*cause
		byOrder []string
		measure []string // in measure order
		err     string
	}{
		{name: "by order when none reads another", causes: []*cause{c("b", 2), c("a", 1), c("c", 3)},
			byOrder: []string{"a", "b", "c"}, measure: []string{"a", "b", "c"}},
		{name: "a cause after those it reads", causes: []*cause{c("a", 1, "c"), c("b", 2), c("c", 3, "b")},
			byOrder: []string{"a", "b", "c"}, measure: []string{"b", "c", "a"}},
		{name: "the earliest ready first", causes: []*cause{c("a", 1, "d"), c("b", 2), c("c", 3), c("d", 4)},
			byOrder: []string{"a", "b", "c", "d"}, measure: []string{"b", "c", "d", "a"}},
		{name: "reads one not registered", causes: []*cause{c("a", 1, "x")}, err: `"a" reads "x"`},
		{name: "a circle", causes: []*cause{c("a", 1, "b"), c("b", 2, "a"), c("c", 3)}, err: "in a circle: a, b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sortCauses(tt.causes)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var byOrder, measure []string
			for _, c := range s.byOrder {
				byOrder = append(byOrder, c.name)
			}
			for _, i := range s.measureOrder {
				measure = append(measure, s.byOrder[i].name)
			}
			if !slices.Equal(byOrder, tt.byOrder) || !slices.Equal(measure, tt.measure) {
				t.Errorf("by order %v, measured %v; want %v, %v", byOrder, measure, tt.byOrder, tt.measure)
			}
		})
	}
}

func TestRegisterRefuses(t *testing.T) {
	some := func(*measuring) measured { return measured{} }
	tests := []struct {
		name  string
		cause cause
	}{
		{"no name", cause{order: 1000, measure: some}},
		{"no measure", cause{name: "x", order: 1000}},
		{"the verdict's name", cause{name: CauseUnexplained, order: 1000, measure: some}},
		{"a name taken", cause{name: CauseSlowWrite, order: 1000, measure: some}},
		{"an order taken", cause{name: "x", order: 10, measure: some}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					deregister(tt.cause.name)
					t.Errorf("registered %+v", tt.cause)
				}
			}()
			register(tt.cause)
		})
	}
	if n := len(Causes()); n != 15 {
		t.Errorf("%d causes after the refusals, want 15", n)
	}
}

// TestReadsOnlyWhatItNames: a cause that reads a measure it did not name
// in after panics, since the registry did not order it after that one.
func TestReadsOnlyWhatItNames(t *testing.T) {
	for _, tt := range []struct {
		name  string
		after []string
		panic bool
	}{
		{"named", []string{CauseSlowWrite}, false},
		{"not named", nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{}, NewIndex(), nil)
			m := &measuring{reqCtx: &reqCtx{}, e: e, self: &cause{name: "reader", after: tt.after}, got: make([]measured, len(e.causes.byOrder))}
			defer func() {
				if p := recover(); (p != nil) != tt.panic {
					t.Errorf("panic %v, want one: %v", p, tt.panic)
				}
			}()
			m.of(CauseSlowWrite)
		})
	}
}

// TestTestCauseNamesAndShares: the test-only cause, registered, names the
// request it holds with its sentence and its share, and an unexplained
// request lists its share after the others.
func TestTestCauseNamesAndShares(t *testing.T) {
	RegisterTestCause(t)
	e := New(Config{}, NewIndex(), nil)
	held := e.Explain(req(1, 0, 100, func(r *event.Request) { r.ClientID = TestStallClient }))
	if held.Cause != CauseTestStall || held.ExplainedMs != 90 || held.Detail != "the test held it 90.0 ms" || held.Shares[CauseTestStall] != 90 {
		t.Errorf("held: cause %q explained %.1f ms, %q, shares %v", held.Cause, held.ExplainedMs, held.Detail, held.Shares)
	}
	other := e.Explain(req(2, 200, 300))
	if other.Cause != CauseUnexplained || !strings.HasSuffix(other.Detail, ", safepoint 0.0, disk read 0.0, test 0.0 ms)") {
		t.Errorf("other: cause %q, %q", other.Cause, other.Detail)
	}
	sum := e.Summary(2, 0, "p99", 10)
	i := slices.IndexFunc(sum.Causes, func(c CauseStat) bool { return c.Cause == CauseTestStall })
	if i < 0 || sum.Causes[i].Requests != 1 || sum.Causes[i+1].Cause != CauseCPUSteal {
		t.Errorf("summary causes %+v", sum.Causes)
	}
}
