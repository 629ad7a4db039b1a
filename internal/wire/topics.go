package wire

import "github.com/kscope-dev/kscope/internal/event"

// TopicNames maps topic ids to names. Produce v13+ and Fetch v13+ name
// topics only by id; names come from Metadata responses seen in the
// capture, from partition.metadata files (--log-dirs), or from the cluster
// (--bootstrap).
type TopicNames struct {
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
	if s, ok := t.idStrings[id]; ok {
		return s
	}
	s := event.TopicIDString(id)
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
	if _, ok := t.byID[id]; !ok && len(t.byID) >= maxTopicNames {
		return
	}
	t.byID[id] = name
}

// Name returns the topic's name, if known.
func (t *TopicNames) Name(id [16]byte) (string, bool) {
	name, ok := t.byID[id]
	return name, ok
}

// Len returns the number of known ids.
func (t *TopicNames) Len() int { return len(t.byID) }

// resolve fills in a partition's topic name from its id, when the name is
// missing and the id is known.
func (t *TopicNames) resolve(p *event.Partition, id [16]byte) {
	if id == ([16]byte{}) {
		return
	}
	p.TopicID = t.idString(id)
	if p.Topic == "" {
		p.Topic, _ = t.Name(id)
	}
}
