package wire

import "strings"

// Extras are fields of the decoded requests that only some of their
// readers use, and that cost the decoder work on every produce request or
// fetch response: Config.Skip names those not to decode. The record
// counts, bytes, offsets and high watermarks every reader uses are always
// decoded.
type Extras uint8

const (
	// ProducerHeaders are what the record batch headers of a produce
	// request say of its producer: event.Producer's Batches, Magic, Codec,
	// ProducerID and Transactional, and event.Partition.Batches (the
	// clients view's producer rows and findings; recordings keep them).
	ProducerHeaders Extras = 1 << iota
	// FetchExtent is a fetch response partition's first and last offsets
	// and timestamps from its batch headers: event.Partition's
	// FirstOffset, LastOffset, FirstTimestamp and MaxTimestamp (the
	// consumers view's lag, delivery gaps and end-to-end latency;
	// explain's fetch age; recordings keep them).
	FetchExtent
)

// AllExtras is every extra field.
const AllExtras = ProducerHeaders | FetchExtent

// Has reports whether e includes every extra of x.
func (e Extras) Has(x Extras) bool { return e&x == x }

// String names the extras, "+" between them ("none" for none).
func (e Extras) String() string {
	var names []string
	if e.Has(ProducerHeaders) {
		names = append(names, "producer-headers")
	}
	if e.Has(FetchExtent) {
		names = append(names, "fetch-extent")
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, "+")
}
