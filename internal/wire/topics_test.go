package wire

import (
	"encoding/binary"
	"sync"
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestTopicNamesConcurrentAdd: the agent adds the topic ids a broker's
// log dirs name from its tracer's goroutine while its decoder looks ids
// up. Without the table's lock Go's map stops the process ("concurrent
// map read and map write"), which this test provokes within its first
// thousands of lookups.
func TestTopicNamesConcurrentAdd(t *testing.T) {
	names := NewTopicNames()
	idOf := func(i int) (id [16]byte) {
		binary.BigEndian.PutUint64(id[8:], uint64(i)+1)
		return id
	}
	const n = 200_000
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			names.Add(idOf(i), "topic")
		}
	})
	d := &Decoder{topics: names}
	for i := range n {
		var p event.Partition
		d.resolveTopic(&p, idOf(i%1000))
		if p.TopicID != event.TopicIDString(idOf(i%1000)) || (p.Topic != "" && p.Topic != "topic") {
			t.Fatalf("lookup %d: %+v", i, p)
		}
	}
	wg.Wait()
	if names.Len() != n {
		t.Fatalf("%d ids, want %d", names.Len(), n)
	}
}

// TestTopicIDMemo: the decoder's memo of the last id answers as the table
// does, also for an id whose name the table learns after it was looked
// up, and for ids that alternate.
func TestTopicIDMemo(t *testing.T) {
	names := NewTopicNames()
	a, b := [16]byte{1}, [16]byte{2}
	var m topicIDMemo
	if str, name := m.lookup(names, a); str != event.TopicIDString(a) || name != "" {
		t.Fatalf("unknown a: %q %q", str, name)
	}
	names.Add(a, "orders")
	names.Add(b, "payments")
	for _, tc := range []struct {
		id   [16]byte
		want string
	}{{a, "orders"}, {a, "orders"}, {b, "payments"}, {a, "orders"}, {b, "payments"}} {
		if str, name := m.lookup(names, tc.id); str != event.TopicIDString(tc.id) || name != tc.want {
			t.Fatalf("%v: %q %q, want %q", tc.id, str, name, tc.want)
		}
	}
}
