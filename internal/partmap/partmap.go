// Package partmap is a map from a Kafka topic partition to a view's state
// of it, for the views the agent feeds every decoded request to.
//
// A produce request names a few partitions, and each view looks each of
// them up: hashing the topic name for every lookup was the largest part
// of the consumers view's cost per request. A small direct-mapped cache
// in front of the map answers the lookups of the partitions in use
// (compared by partition number and topic name) without hashing.
package partmap

import "iter"

// Key names a topic partition.
type Key struct {
	Topic     string
	Partition int32
}

// cacheSlots is the cache's size: a power of two, more than the
// partitions one producer writes to at once in the common case.
const cacheSlots = 32

// Map maps topic partitions to *V. Its zero value is not usable: use New.
// It is not safe for concurrent use.
type Map[V any] struct {
	m     map[Key]*V
	cache [cacheSlots]slot[V]
}

type slot[V any] struct {
	key Key
	v   *V
}

// New returns an empty Map.
func New[V any]() *Map[V] { return &Map[V]{m: map[Key]*V{}} }

// slotOf spreads partitions of topics with different name lengths over
// the slots too.
func (m *Map[V]) slotOf(topic string, partition int32) *slot[V] {
	return &m.cache[(uint32(partition)+uint32(len(topic))*7)%cacheSlots]
}

// Get returns the partition's state, or nil.
func (m *Map[V]) Get(topic string, partition int32) *V {
	s := m.slotOf(topic, partition)
	if s.v != nil && s.key.Partition == partition && s.key.Topic == topic {
		return s.v
	}
	v := m.m[Key{topic, partition}]
	if v != nil {
		*s = slot[V]{Key{topic, partition}, v}
	}
	return v
}

// Put sets the partition's state.
func (m *Map[V]) Put(topic string, partition int32, v *V) {
	m.m[Key{topic, partition}] = v
	*m.slotOf(topic, partition) = slot[V]{Key{topic, partition}, v}
}

// Delete forgets the partition.
func (m *Map[V]) Delete(topic string, partition int32) {
	delete(m.m, Key{topic, partition})
	if s := m.slotOf(topic, partition); s.key.Partition == partition && s.key.Topic == topic {
		*s = slot[V]{}
	}
}

// Len is the number of partitions held.
func (m *Map[V]) Len() int { return len(m.m) }

// All yields every partition and its state, in no order. The Map must
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
