// Command zoo-sarama is the Sarama (github.com/IBM/sarama) client of the
// client zoo (internal/testkit/clientzoo): it produces and then consumes
// a bounded number of records with the settings its flags give, and
// prints one line "zoo-result {json}" with what it did. It is a module of
// its own so that Sarama never enters kscope's go.mod; the harness builds
// it with scripts/zoo-sarama.sh.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
)

// options are the flags: one client's workload and configuration.
type options struct {
	bootstrap, clientID, topic, version string
	timeout                             time.Duration

	produce     bool
	acks        int
	compression string
	idempotent  bool
	batchBytes  int
	lingerMs    int
	records     int
	recordSize  int
	burst       int
	rate        int

	group          string
	consume        int
	fetchMaxWaitMs int
	fetchMinBytes  int
}

// result is the line the harness reads.
type result struct {
	Produced int    `json:"produced"`
	Consumed int    `json:"consumed"`
	Error    string `json:"error,omitempty"`
}

func main() {
	o := parseFlags()
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	var res result
	err := run(ctx, o, &res)
	if err != nil {
		res.Error = err.Error()
	}
	line, _ := json.Marshal(res)
	fmt.Println("zoo-result " + string(line))
	if err != nil {
		fmt.Fprintln(os.Stderr, "zoo-sarama:", err)
		os.Exit(1)
	}
}

func parseFlags() options {
	var o options
	flag.StringVar(&o.bootstrap, "bootstrap", "", "broker host:port list, comma-separated")
	flag.StringVar(&o.clientID, "client-id", "", "client.id")
	flag.StringVar(&o.topic, "topic", "", "topic to produce to and consume from")
	flag.StringVar(&o.version, "version", "", "Kafka version Sarama is told the broker is (Config.Version), e.g. 0.10.2.0")
	flag.DurationVar(&o.timeout, "timeout", 40*time.Second, "bound on the whole run")
	flag.BoolVar(&o.produce, "produce", false, "produce -records records")
	flag.IntVar(&o.acks, "acks", -1, "Producer.RequiredAcks: 0, 1 or -1")
	flag.StringVar(&o.compression, "compression", "none", "Producer.Compression: none|gzip|snappy|lz4|zstd")
	flag.BoolVar(&o.idempotent, "idempotent", false, "Producer.Idempotent")
	flag.IntVar(&o.batchBytes, "batch-bytes", 0, "Producer.Flush.Bytes")
	flag.IntVar(&o.lingerMs, "linger-ms", 0, "Producer.Flush.Frequency in ms")
	flag.IntVar(&o.records, "records", 0, "records to produce")
	flag.IntVar(&o.recordSize, "record-size", 200, "bytes of each record's value")
	flag.IntVar(&o.burst, "burst", 0, "records sent at once before pacing at -rate")
	flag.IntVar(&o.rate, "rate", 0, "records per second after the burst (0: unpaced)")
	flag.StringVar(&o.group, "group", "", "consumer group")
	flag.IntVar(&o.consume, "consume", 0, "records to consume from the start of -topic (0: no consumer)")
	flag.IntVar(&o.fetchMaxWaitMs, "fetch-max-wait-ms", 500, "Consumer.MaxWaitTime in ms")
	flag.IntVar(&o.fetchMinBytes, "fetch-min-bytes", 1, "Consumer.Fetch.Min")
	flag.Parse()
	return o
}

func run(ctx context.Context, o options, res *result) error {
	cfg, err := config(o)
	if err != nil {
		return err
	}
	addrs := strings.Split(o.bootstrap, ",")
	if o.produce {
		if res.Produced, err = produce(ctx, addrs, cfg, o); err != nil {
			return err
		}
	}
	if o.consume > 0 {
		if res.Consumed, err = consume(ctx, addrs, cfg, o); err != nil {
			return err
		}
	}
	return nil
}

// config maps the flags onto a Sarama config.
func config(o options) (*sarama.Config, error) {
	v, err := sarama.ParseKafkaVersion(o.version)
	if err != nil {
		return nil, fmt.Errorf("-version: %w", err)
	}
	codec, err := codec(o.compression)
	if err != nil {
		return nil, err
	}
	cfg := sarama.NewConfig()
	cfg.Version = v
	cfg.ClientID = o.clientID
	cfg.Metadata.AllowAutoTopicCreation = false
	cfg.Producer.RequiredAcks = sarama.RequiredAcks(o.acks)
	cfg.Producer.Compression = codec
	cfg.Producer.Idempotent = o.idempotent
	if o.idempotent {
		// What Sarama's Validate demands of an idempotent producer.
		cfg.Net.MaxOpenRequests = 1
	}
	cfg.Producer.Flush.Bytes = o.batchBytes
	cfg.Producer.Flush.Frequency = time.Duration(o.lingerMs) * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Consumer.MaxWaitTime = time.Duration(o.fetchMaxWaitMs) * time.Millisecond
	cfg.Consumer.Fetch.Min = int32(o.fetchMinBytes)
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Return.Errors = true
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("sarama config: %w", err)
	}
	return cfg, nil
}

func codec(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("-compression %q: want none, gzip, snappy, lz4 or zstd", name)
}

// produce sends o.records keyed records through an AsyncProducer (the one
// that batches by Flush.*), paced after the burst, and waits for every
// acknowledgement.
func produce(ctx context.Context, addrs []string, cfg *sarama.Config, o options) (int, error) {
	p, err := sarama.NewAsyncProducer(addrs, cfg)
	if err != nil {
		return 0, fmt.Errorf("producer: %w", err)
	}
	var acked, failed atomic.Int64
	var firstErr atomic.Value
	done := make(chan struct{})
	go func() {
		defer close(done)
		successes, errs := p.Successes(), p.Errors()
		for successes != nil || errs != nil {
			select {
			case _, ok := <-successes:
				if !ok {
					successes = nil
					continue
				}
				acked.Add(1)
			case e, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				failed.Add(1)
				firstErr.CompareAndSwap(nil, e.Err.Error())
			}
		}
	}()
	value := make([]byte, o.recordSize)
	start := time.Now()
	sent := 0
	for i := range o.records {
		if !pace(ctx, start, i, o.burst, o.rate) {
			break
		}
		msg := &sarama.ProducerMessage{Topic: o.topic, Key: sarama.StringEncoder("k" + strconv.Itoa(i)), Value: sarama.ByteEncoder(value)}
		select {
		case p.Input() <- msg:
			sent++
		case <-ctx.Done():
		}
	}
	p.AsyncClose()
	select {
	case <-done:
	case <-ctx.Done():
		p.Close()
		<-done
	}
	n := int(acked.Load())
	if n < o.records {
		msg, _ := firstErr.Load().(string)
		return n, fmt.Errorf("produce to %s: %d of %d records acknowledged (%d sent, %d failed: %s; %v)", o.topic, n, o.records, sent, failed.Load(), msg, ctx.Err())
	}
	return n, nil
}

// pace waits until record i is due: the first burst records at once, the
// rest at rate per second. It reports false when ctx ends first.
func pace(ctx context.Context, start time.Time, i, burst, rate int) bool {
	if i < burst || rate <= 0 {
		return ctx.Err() == nil
	}
	due := start.Add(time.Duration(i-burst) * time.Second / time.Duration(rate))
	t := time.NewTimer(time.Until(due))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// consume reads o.consume records of o.topic from the start in group
// o.group, marks them, and leaves the group (Close commits the marks).
func consume(ctx context.Context, addrs []string, cfg *sarama.Config, o options) (int, error) {
	g, err := sarama.NewConsumerGroup(addrs, o.group, cfg)
	if err != nil {
		return 0, fmt.Errorf("consumer group: %w", err)
	}
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	h := &handler{want: int64(o.consume), done: stop}
	go func() {
		for e := range g.Errors() {
			h.err.CompareAndSwap(nil, e.Error())
		}
	}()
	for cctx.Err() == nil {
		if err := g.Consume(cctx, []string{o.topic}, h); err != nil && !errors.Is(err, sarama.ErrClosedConsumerGroup) {
			h.err.CompareAndSwap(nil, err.Error())
			break
		}
	}
	if err := g.Close(); err != nil {
		return int(h.got.Load()), fmt.Errorf("consumer group close: %w", err)
	}
	n := int(h.got.Load())
	if n < o.consume {
		msg, _ := h.err.Load().(string)
		return n, fmt.Errorf("consume %s: %d of %d records (%s; %v)", o.topic, n, o.consume, msg, ctx.Err())
	}
	return n, nil
}

// handler counts records and ends the consumption once it has them all.
type handler struct {
	want int64
	got  atomic.Int64
	err  atomic.Value
	done context.CancelFunc
}

func (h *handler) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *handler) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *handler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for {
		select {
		case m, ok := <-c.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			if h.got.Add(1) >= h.want {
				s.Commit()
				h.done()
				return nil
			}
		case <-s.Context().Done():
			return nil
		}
	}
}
