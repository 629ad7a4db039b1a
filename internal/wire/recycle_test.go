package wire

import (
	"testing"

	"github.com/kscope-dev/kscope/internal/event"
)

// TestRecycleBounds: after a peak of requests in flight, Config.Recycle
// keeps at most maxFreeRequests events, none holding an array of more than
// maxRecycledPartitions partitions, each zeroed with its array emptied.
func TestRecycleBounds(t *testing.T) {
	d := NewDecoder(Config{Recycle: true}, nil, nil, func(*event.Request) {})
	for i := range maxFreeRequests + 50 {
		n := 3
		if i%2 == 0 {
			n = maxRecycledPartitions + 1
		}
		ev := &event.Request{CorrelationID: int32(i), Partitions: make([]event.Partition, n)}
		ev.Partitions[0].Topic = "orders"
		d.emitRequest(ev)
	}
	if len(d.freeRequests) != maxFreeRequests {
		t.Fatalf("%d events kept, want %d", len(d.freeRequests), maxFreeRequests)
	}
	kept := 0
	for _, ev := range d.freeRequests {
		if cap(ev.Partitions) > maxRecycledPartitions {
			t.Fatalf("an array of %d partitions kept", cap(ev.Partitions))
		}
		if cap(ev.Partitions) > 0 {
			kept++
			if ev.Partitions[:cap(ev.Partitions)][0].Topic != "" {
				t.Fatal("a kept array still names a topic")
			}
		}
		if ev.CorrelationID != 0 || len(ev.Partitions) != 0 {
			t.Fatalf("a kept event not zeroed: %+v", ev)
		}
	}
	if kept != maxFreeRequests/2 {
		t.Errorf("%d arrays kept, want the %d small ones", kept, maxFreeRequests/2)
	}
	// Reused: the next request gets the last kept event, emptied.
	n := len(d.freeRequests)
	last := d.freeRequests[n-1]
	if ev := d.newRequest(); ev != last || len(ev.Partitions) != 0 || len(d.freeRequests) != n-1 {
		t.Errorf("newRequest: %p with %d partitions, %d events left; want %p, 0, %d", ev, len(ev.Partitions), len(d.freeRequests), last, n-1)
	}
}
