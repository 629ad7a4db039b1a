package event

import (
	"fmt"
	"strings"
	"testing"
)

// TestKindsDispatch: every kind's events go to its own handler, set as a
// named field or with On, and to no other; Bind sees them too.
func TestKindsDispatch(t *testing.T) {
	events := []any{&Write{}, &JournalCommit{}, &FileSync{}, &BlockIO{}, &KernelWait{}, &CPUSteal{},
		&RunDelay{}, &Wakeup{}, &ConnThread{}, &CPUThrottle{}, &JVMPause{}, &PageCacheAdds{}}
	if len(events) != len(Kinds()) {
		t.Fatalf("%d kinds, %d events to try", len(Kinds()), len(events))
	}
	var bound Handlers
	var got []string
	for _, k := range Kinds() {
		k.Bind(&bound, func(ev any) error { got = append(got, fmt.Sprintf("%T", ev)); return nil })
	}
	for _, ev := range events {
		if err := bound.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if want := "*event.Write,*event.JournalCommit,*event.FileSync,*event.BlockIO,*event.KernelWait,*event.CPUSteal," +
		"*event.RunDelay,*event.Wakeup,*event.ConnThread,*event.CPUThrottle,*event.JVMPause,*event.PageCacheAdds"; strings.Join(got, ",") != want {
		t.Errorf("bound handlers got %s", strings.Join(got, ","))
	}
	// Named fields are the kinds' handlers.
	var named []string
	h := Handlers{
		Steal:    func(*CPUSteal) error { named = append(named, "steal"); return nil },
		JVMPause: func(*JVMPause) error { named = append(named, "jvm"); return nil },
	}
	for _, ev := range append(events, "not an event", 42) {
		if err := h.Handle(ev); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(named, ",") != "steal,jvm" || Steals.Handler(&h) == nil || RunDelays.Handler(&h) != nil {
		t.Errorf("named handlers got %v", named)
	}
}

// TestNewKindRefusesDuplicates: a second kind of a type, or of a name,
// is a programming error caught when the package initialises.
func TestNewKindRefusesDuplicates(t *testing.T) {
	type fresh struct{}
	for _, tc := range []struct {
		name string
		add  func()
	}{
		{"type with a kind", func() { NewKind[RunDelay](StreamSched, nil, "run_delay_again") }},
		{"name of a kind", func() { NewKind[fresh](StreamSched, nil, KindRunDelay) }},
		{"no name, as writes", func() { NewKind[fresh](StreamWrites, nil, "") }},
		{"no names at all", func() { NewKind[fresh](StreamSched, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := len(Kinds())
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
				if len(Kinds()) != n {
					t.Error("the kind was added")
				}
			}()
			tc.add()
		})
	}
}
