package wire

import (
	"sync"

	"github.com/kscope-dev/kscope/internal/event"
)

// TopicNames maps topic ids to names. Produce v13+ and Fetch v13+ name
// topics only by id; names come from Metadata responses seen in the
// capture, from partition.metadata files (--log-dirs), or from the cluster
// (--bootstrap).
type TopicNames struct {
	// mu guards the maps: the agent adds the ids a broker's log dirs
	// name from its tracer's goroutine while its decoder reads them.
	mu   sync.RWMutex
	byID map[[16]byte]string
	// idStrings caches ids' base64 form: every partition of every
	// Produce v13+ request carries one.
	idStrings map[[16]byte]string
}

// maxTopicNames bounds the table: a hostile capture could announce an
// unbounded number of ids.
const maxTopicNames = 1 << 20

// NewTopicNames returns an empty table.
func NewTopicNames() *TopicNames {
	return &TopicNames{byID: make(map[[16]byte]string), idStrings: make(map[[16]byte]string)}
}

// idString returns event.TopicIDString(id), cached for at most
// maxTopicNames ids.
func (t *TopicNames) idString(id [16]byte) string {
	t.mu.RLock()
	s, ok := t.idStrings[id]
	t.mu.RUnlock()
	if ok {
		return s
	}
	s = event.TopicIDString(id)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.idStrings) < maxTopicNames {
		t.idStrings[id] = s
	}
	return s
}

// Add records a topic's id. Zero ids and empty names are ignored.
func (t *TopicNames) Add(id [16]byte, name string) {
	if id == ([16]byte{}) || name == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.byID[id]; !ok && len(t.byID) >= maxTopicNames {
		return
	}
	t.byID[id] = name
}

// Name returns the topic's name, if known.
func (t *TopicNames) Name(id [16]byte) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	name, ok := t.byID[id]
	return name, ok
}

// Len returns the number of known ids.
func (t *TopicNames) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.byID)
}

// topicIDMemo is a decoder's last topic id looked up, its base64 form
// and its name once known: a request's partitions and its response's
// mostly name one topic, and hashing the id for each, twice, was a
// fortieth of the agent's time.
type topicIDMemo struct {
	id        [16]byte
	str, name string
}

// lookup returns id's base64 form and its name ("" while unknown).
func (m *topicIDMemo) lookup(t *TopicNames, id [16]byte) (str, name string) {
	if m.str == "" || m.id != id {
		m.id, m.str, m.name = id, t.idString(id), ""
	}
	if m.name == "" {
		m.name, _ = t.Name(id)
	}
	return m.str, m.name
}

// resolveTopic fills in a partition's topic id and, when its name is
// missing and the id is known, its name.
func (d *Decoder) resolveTopic(p *event.Partition, id [16]byte) {
	if id == ([16]byte{}) {
		return
	}
	str, name := d.topicIDs.lookup(d.topics, id)
	p.TopicID = str
	if p.Topic == "" {
		p.Topic = name
	}
}
