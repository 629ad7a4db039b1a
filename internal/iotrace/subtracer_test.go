package iotrace

import (
	"errors"
	"slices"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestSourcesTable: every source can be turned on and opened, and the
// kinds it sends are in event's table, so that a recording writes and
// reads them back.
func TestSourcesTable(t *testing.T) {
	names := map[string]bool{}
	for _, src := range sources {
		if src.name == "" || names[src.name] || src.wanted == nil || src.open == nil || len(src.kinds) == 0 {
			t.Errorf("source %q: want a unique name, wanted, open and kinds", src.name)
		}
		names[src.name] = true
		for _, k := range src.kinds {
			if !slices.Contains(event.Kinds(), k) {
				t.Errorf("source %q sends kind %v, which event.Kinds does not list", src.name, k.Names())
			}
		}
	}
	if (&Config{}).anySource() {
		t.Error("the zero Config asks for a source")
	}
}

// anySource reports whether c asks for any source.
func (c *Config) anySource() bool {
	return slices.ContainsFunc(sources, func(s source) bool { return s.wanted(c) })
}

// TestModeString: what Mode says, the system calls first, then the
// sources that describe themselves, in the table's order.
func TestModeString(t *testing.T) {
	for _, tc := range []struct {
		m    Mode
		want string
	}{
		{Mode{Tracepoints: true}, "syscall tracepoints"},
		{Mode{SyscallFentry: true, Functions: []string{"ext4_file_write_iter"}},
			"syscall fentry/fexit + fentry/fexit on ext4_file_write_iter"},
		{Mode{Tracepoints: true, SyscallFentryErr: errors.New("refused"), FunctionsErr: errors.New("no")},
			"syscall tracepoints (not fentry: refused) (file system functions: fentry not available: no)"},
		{Mode{Tracepoints: true, Steal: true, RunQueue: true, Conns: []uint16{9092, 9093}},
			"syscall tracepoints + steal + run-queue delays + connection threads (ports 9092,9093)"},
		{Mode{Tracepoints: true, StealErr: errors.New("bare metal"), Conns: []uint16{9092}},
			"syscall tracepoints (steal not traced: bare metal) + connection threads (ports 9092)"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.m, got, tc.want)
		}
	}
}
