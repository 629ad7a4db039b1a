package partmap

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestMapAgreesWithAMap: under any mix of gets, puts and deletes over
// topics whose partitions share cache slots, Map answers as a plain map.
func TestMapAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	topics := []string{"a", "b", "orders", "ordersX", "payments", ""}
	m := New[int]()
	ref := map[Key]*int{}
	for step := range 100_000 {
		k := Key{topics[rng.IntN(len(topics))], int32(rng.IntN(80)) - 8}
		switch op := rng.IntN(10); {
		case op < 6:
			if got, want := m.Get(k.Topic, k.Partition), ref[k]; got != want {
				t.Fatalf("step %d: Get(%v) = %p, want %p", step, k, got, want)
			}
		case op < 9:
			v := new(int)
			*v = step
			m.Put(k.Topic, k.Partition, v)
			ref[k] = v
		default:
			m.Delete(k.Topic, k.Partition)
			delete(ref, k)
		}
		if m.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, m.Len(), len(ref))
		}
	}
	n := 0
	for k, v := range m.All() {
		if ref[k] != v {
			t.Fatalf("All: %v → %p, want %p", k, v, ref[k])
		}
		n++
	}
	if n != len(ref) {
		t.Fatalf("All yielded %d, want %d", n, len(ref))
	}
}

// BenchmarkGet is the lookups of a producer writing to 12 partitions of
// one topic; BenchmarkMapGet the plain map's.
func BenchmarkGet(b *testing.B) {
	m := New[int]()
	for p := range int32(12) {
		m.Put("orders-"+strconv.Itoa(1), p, new(int))
	}
	topic := "orders-" + strconv.Itoa(1) // another string, equal
	i := int32(0)
	for b.Loop() {
		i++
		if m.Get(topic, i%12) == nil {
			b.Fatal("missing")
		}
	}
}

func BenchmarkMapGet(b *testing.B) {
	m := map[Key]*int{}
	for p := range int32(12) {
		m[Key{"orders-" + strconv.Itoa(1), p}] = new(int)
	}
	topic := "orders-" + strconv.Itoa(1)
	i := int32(0)
	for b.Loop() {
		i++
		if m[Key{topic, i % 12}] == nil {
			b.Fatal("missing")
		}
	}
}
