package connmap

import (
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestMapAgreesWithAMap: under any mix of gets and puts, with numbers
// that two decoders give alike (the same number for other addresses),
// numbers sharing cache slots, and unnumbered requests, Map answers as a
// plain map of the addresses.
func TestMapAgreesWithAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	clients := []string{"10.0.0.1:5000", "10.0.0.1:5001", "10.0.0.2:5000", ""}
	brokers := []string{"10.0.1.1:9092", "10.0.1.2:9092"}
	m := New[int]()
	ref := map[Key]*int{}
	for step := range 100_000 {
		k := Key{clients[rng.IntN(len(clients))], brokers[rng.IntN(len(brokers))]}
		// Numbers collide with each other and across the slots on
		// purpose: 0 (a recording's), and a few others reused for any
		// address.
		id := []uint64{0, 1, 2, 1 + cacheSlots, 7}[rng.IntN(5)]
		if rng.IntN(3) < 2 {
			if got, want := m.Get(id, k.Client, k.Broker), ref[k]; got != want {
				t.Fatalf("step %d: Get(%d, %v) = %p, want %p", step, id, k, got, want)
			}
			continue
		}
		v := new(int)
		*v = step
		m.Put(id, k.Client, k.Broker, v)
		ref[k] = v
		if m.Len() != len(ref) {
			t.Fatalf("step %d: Len %d, want %d", step, m.Len(), len(ref))
		}
	}
	n := 0
	for k, v := range m.All() {
		if ref[k] != v {
			t.Fatalf("All yielded %v = %p, want %p", k, v, ref[k])
		}
		n++
	}
	if n != len(ref) {
		t.Fatalf("All yielded %d, want %d", n, len(ref))
	}
}

// BenchmarkGet is the lookups of requests on 16 numbered connections;
// BenchmarkMapGet the plain map's.
func BenchmarkGet(b *testing.B) {
	m := New[int]()
	keys := benchKeys()
	for i, k := range keys {
		m.Put(uint64(i+1), k.Client, k.Broker, new(int))
	}
	i := 0
	for b.Loop() {
		i++
		k := keys[i%len(keys)]
		if m.Get(uint64(i%len(keys)+1), k.Client, k.Broker) == nil {
			b.Fatal("missing")
		}
	}
}

func BenchmarkMapGet(b *testing.B) {
	m := map[Key]*int{}
	keys := benchKeys()
	for _, k := range keys {
		m[k] = new(int)
	}
	i := 0
	for b.Loop() {
		i++
		if m[keys[i%len(keys)]] == nil {
			b.Fatal("missing")
		}
	}
}

func benchKeys() []Key {
	var keys []Key
	for i := range 16 {
		keys = append(keys, Key{"10.20.30.40:" + strconv.Itoa(40000+i), "10.20.30.1:9092"})
	}
	return keys
}
