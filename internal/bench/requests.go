package bench

import (
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// requestCounter counts the requests the run's clients write to the
// cluster in the measured part, by API (kgo's HookBrokerWrite): the
// request rate a load put on the brokers, which messages/s does not say
// (batching decides it). It is what an observer of the brokers (kscope
// agent) is measured against.
type requestCounter struct {
	r *run
	// start is the measured part's start, set when it is known (clients
	// write requests before: it is read on their goroutines); until then
	// nothing is counted.
	start atomic.Int64
	byKey [maxCountedKey + 1]atomic.Int64
}

// maxCountedKey is the largest API key counted by name; larger ones are
// counted under it.
const maxCountedKey = 80

// OnBrokerWrite is kgo's hook, called after a request is written.
func (c *requestCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err != nil {
		return
	}
	start := c.start.Load()
	if now := c.r.clk.now(); start == 0 || now < start || now >= c.r.windowEnd.Load() {
		return
	}
	c.byKey[min(max(int(key), 0), maxCountedKey)].Add(1)
}

// totals returns the requests by API name and their sum.
func (c *requestCounter) totals() (map[string]int64, int64) {
	by := map[string]int64{}
	var sum int64
	for key := range c.byKey {
		n := c.byKey[key].Load()
		if n == 0 {
			continue
		}
		name := kmsg.NameForKey(int16(key))
		if name == "" {
			name = "Unknown"
		}
		by[name] += n
		sum += n
	}
	return by, sum
}
