package traffic

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/cluster"
)

// MessageIDHeader is the record header ProduceFranz sets, with values
// "<topic>-<i>", so decoded packets can be matched to produced records.
const MessageIDHeader = "message-id"

// Codecs returns the codec names ProduceFranz and JavaProducerPerf accept.
func Codecs() []string { return cluster.Codecs() }

func franzCodec(codec string) (kgo.CompressionCodec, error) { return cluster.Codec(codec) }

// ProduceFranz produces n records to topic (auto-created) with franz-go,
// batch-compressed with codec. Record i has key "key-<i>", value
// "<topic> value <i>" and, withMessageIDs, the header message-id
// "<topic>-<i>". It returns once all records are acknowledged (acks=all).
func ProduceFranz(ctx context.Context, addr, topic string, n int, codec string, withMessageIDs bool) error {
	cl, err := newProducer(addr, "kscope-franz-producer", topic, codec)
	if err != nil {
		return err
	}
	defer cl.Close()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		r := &kgo.Record{
			Key:   []byte("key-" + strconv.Itoa(i)),
			Value: []byte(topic + " value " + strconv.Itoa(i)),
		}
		if withMessageIDs {
			r.Headers = []kgo.RecordHeader{{Key: MessageIDHeader, Value: []byte(topic + "-" + strconv.Itoa(i))}}
		}
		recs[i] = r
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		return fmt.Errorf("traffic: franz produce to %s: %w", topic, err)
	}
	return nil
}

// ConsumeFranz consumes n records of topic from the start in consumer
// group group, commits and leaves the group. It fails if ctx ends first.
func ConsumeFranz(ctx context.Context, addr, group, topic string, n int) error {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID("kscope-franz-consumer"),
		kgo.ConsumerGroup(group),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.DisableAutoCommit(), // commit exactly what was consumed, below
	)
	if err != nil {
		return fmt.Errorf("traffic: franz consumer: %w", err)
	}
	defer cl.Close() // leaves the group
	got := 0
	for got < n {
		fs := cl.PollRecords(ctx, n-got)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("traffic: franz consume %s: got %d of %d records: %w", topic, got, n, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if ferr == nil {
				ferr = fmt.Errorf("traffic: franz consume %s[%d]: %w", t, p, err)
			}
		})
		if ferr != nil {
			return ferr
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return fmt.Errorf("traffic: franz commit %s: %w", topic, err)
	}
	return nil
}

// WarmUp sends n produce requests of one record each, one at a time, to
// the topics "<prefix>-<codec>", cycling through the codecs. A broker just
// started runs its request path, and its request logger's JSON rendering,
// in the JVM's interpreter for the first thousands of requests: a
// millisecond and more each, spent by the network thread between sending
// a response and reading the next request. Measurements that take the
// broker's own clock as the reference warm it up first.
func WarmUp(ctx context.Context, addr, prefix string, n int) error {
	codecs := Codecs()
	clients := make([]*kgo.Client, len(codecs))
	defer func() {
		for _, cl := range clients {
			if cl != nil {
				cl.Close()
			}
		}
	}()
	for i, codec := range codecs {
		cl, err := newProducer(addr, "kscope-warm-up", prefix+"-"+codec, codec)
		if err != nil {
			return err
		}
		clients[i] = cl
	}
	for i := range n {
		r := &kgo.Record{Value: []byte("warm-up " + strconv.Itoa(i))}
		if err := clients[i%len(clients)].ProduceSync(ctx, r).FirstErr(); err != nil {
			return fmt.Errorf("traffic: warm-up produce %d of %d: %w", i+1, n, err)
		}
	}
	return nil
}

// newProducer returns a franz-go client producing to topic (auto-created)
// with batches compressed by codec.
func newProducer(addr, clientID, topic, codec string) (*kgo.Client, error) {
	c, err := franzCodec(codec)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(clientID),
		kgo.DefaultProduceTopic(topic),
		kgo.AllowAutoTopicCreation(),
		// A topic being auto-created is missing from the first metadata
		// response; the default 5 s minimum age would delay the refresh
		// that finds it.
		kgo.MetadataMinAge(100*time.Millisecond),
		kgo.ProducerBatchCompression(c),
	)
	if err != nil {
		return nil, fmt.Errorf("traffic: franz producer %s: %w", clientID, err)
	}
	return cl, nil
}
