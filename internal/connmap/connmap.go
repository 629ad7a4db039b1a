// Package connmap is a map from a Kafka connection (its client and broker
// addresses) to a view's state of it, for the views the agent feeds every
// decoded request to.
//
// Finding a connection's state by its two addresses hashes both strings
// for every request. The wire decoder numbers its connections
// (event.Request.Conn); a small direct-mapped cache in front of the map
// answers by that number, and checks the addresses (the same strings of
// the connection, so compared by pointer) so that a number is only ever a
// hint: requests of a recording carry none, and two decoders number their
// connections alike.
package connmap

import "iter"

// Key names a connection.
type Key struct {
	Client, Broker string
}

// cacheSlots is the cache's size: a power of two, more than the
// connections a broker's busy clients keep open in the common case.
const cacheSlots = 256

// Map maps connections to *V. Its zero value is not usable: use New. It
// is not safe for concurrent use.
type Map[V any] struct {
	m     map[Key]*V
	cache [cacheSlots]slot[V]
}

type slot[V any] struct {
	id  uint64
	key Key
	v   *V
}

// New returns an empty Map.
func New[V any]() *Map[V] { return &Map[V]{m: map[Key]*V{}} }

// Get returns the state of the connection numbered id (0: unnumbered)
// between client and broker, or nil.
func (m *Map[V]) Get(id uint64, client, broker string) *V {
	var s *slot[V]
	if id != 0 {
		s = &m.cache[id%cacheSlots]
		if s.v != nil && s.id == id && s.key.Client == client && s.key.Broker == broker {
			return s.v
		}
	}
	v := m.m[Key{client, broker}]
	if v != nil && s != nil {
		*s = slot[V]{id, Key{client, broker}, v}
	}
	return v
}

// Put sets the state of the connection numbered id (0: unnumbered)
// between client and broker.
func (m *Map[V]) Put(id uint64, client, broker string, v *V) {
	k := Key{client, broker}
	if _, held := m.m[k]; held {
		// Rare (the views put a connection they found none for): the
		// slots that hold the old state under other numbers go.
		for i := range m.cache {
			if m.cache[i].v != nil && m.cache[i].key == k {
				m.cache[i] = slot[V]{}
			}
		}
	}
	m.m[k] = v
	if id != 0 {
		m.cache[id%cacheSlots] = slot[V]{id, Key{client, broker}, v}
	}
}

// Len is the number of connections held.
func (m *Map[V]) Len() int { return len(m.m) }

// All yields every connection and its state, in no order. The Map must
// not change during the iteration.
func (m *Map[V]) All() iter.Seq2[Key, *V] {
	return func(yield func(Key, *V) bool) {
		for k, v := range m.m {
			if !yield(k, v) {
				return
			}
		}
	}
}
