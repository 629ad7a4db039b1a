package clientzoo

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kscope-dev/kscope/internal/cluster"
)

// franzModule is franz-go's module path: kgo reports its version, from
// this binary's build info, in ApiVersions (KIP-511).
const franzModule = "github.com/twmb/franz-go"

// FranzSoftware is what kgo reports of itself: "kgo" and the franz-go
// module's version this binary is built with.
func FranzSoftware() Software {
	v := Unknown
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == franzModule {
				v = d.Version
			}
		}
	}
	return Software{Name: "kgo", Version: v}
}

// runFranz runs a franz-go producer, then a consumer, in this process.
func runFranz(ctx context.Context, env Env, c Client, r *Result) error {
	if c.Producer != nil {
		n, err := franzProduce(ctx, env.Bootstrap, c)
		r.Produced = n
		if err != nil {
			return err
		}
	}
	if c.Consumer != nil {
		n, err := franzConsume(ctx, env.Bootstrap, c)
		r.Consumed = n
		if err != nil {
			return err
		}
	}
	return nil
}

// franzProducerOpts maps c.Producer onto kgo's options.
func franzProducerOpts(c Client, bootstrap string, timeout time.Duration) ([]kgo.Opt, error) {
	p := c.Producer
	codec, err := cluster.Codec(p.Compression)
	if err != nil {
		return nil, err
	}
	acks := map[int16]kgo.Acks{0: kgo.NoAck(), 1: kgo.LeaderAck(), -1: kgo.AllISRAcks()}[p.Acks]
	opts := []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID(c.ClientID),
		kgo.DefaultProduceTopic(c.Topic),
		kgo.RequiredAcks(acks),
		kgo.ProducerBatchCompression(codec),
		kgo.ProducerLinger(time.Duration(p.LingerMs) * time.Millisecond),
		kgo.ProducerBatchMaxBytes(int32(min(p.BatchSize, 1<<30))),
		kgo.RecordDeliveryTimeout(timeout),
	}
	if !p.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	if p.Transactional {
		opts = append(opts, kgo.TransactionalID(c.TransactionalID()), kgo.TransactionTimeout(max(timeout, time.Second)))
	}
	return opts, nil
}

// franzProduce produces c.Producer.Records records, paced, in one
// transaction when transactional, and waits for every acknowledgement.
func franzProduce(ctx context.Context, bootstrap string, c Client) (int, error) {
	opts, err := franzProducerOpts(c, bootstrap, time.Until(deadline(ctx)))
	if err != nil {
		return 0, err
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return 0, fmt.Errorf("franz-go producer: %w", err)
	}
	defer cl.Close()
	p := c.Producer
	if p.Transactional {
		if err := cl.BeginTransaction(); err != nil {
			return 0, fmt.Errorf("franz-go begin transaction: %w", err)
		}
	}
	var acked atomic.Int64
	var firstErr atomic.Pointer[error]
	value := make([]byte, p.RecordSize)
	start := time.Now()
	for i := range p.Records {
		if !pace(ctx, start, i, p.Burst, p.Rate) {
			break
		}
		rec := &kgo.Record{Key: []byte("k" + strconv.Itoa(i)), Value: value}
		cl.Produce(ctx, rec, func(_ *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			acked.Add(1)
		})
	}
	ferr := cl.Flush(ctx)
	if p.Transactional && ferr == nil {
		ferr = cl.EndTransaction(ctx, kgo.TryCommit)
	}
	n := int(acked.Load())
	if e := firstErr.Load(); e != nil {
		ferr = errors.Join(ferr, *e)
	}
	if n < p.Records || ferr != nil {
		return n, fmt.Errorf("franz-go produce to %s: %d of %d records acknowledged: %w", c.Topic, n, p.Records, errors.Join(ferr, ctx.Err()))
	}
	return n, nil
}

// pace waits until record i is due: the first burst at once, the rest
// at rate per second. It reports false when ctx ends first.
func pace(ctx context.Context, start time.Time, i, burst, rate int) bool {
	if i < burst || rate <= 0 {
		return ctx.Err() == nil
	}
	return waitUntil(ctx, start.Add(time.Duration(i-burst)*time.Second/time.Duration(rate)))
}

// franzConsumerOpts maps c.Consumer onto kgo's options.
func franzConsumerOpts(c Client, bootstrap string) []kgo.Opt {
	k := c.Consumer
	opts := []kgo.Opt{
		kgo.SeedBrokers(bootstrap),
		kgo.ClientID(c.ClientID),
		kgo.ConsumerGroup(k.Group),
		kgo.ConsumeTopics(c.Topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(time.Duration(k.FetchMaxWaitMs) * time.Millisecond),
		kgo.FetchMinBytes(int32(k.FetchMinBytes)),
		kgo.DisableAutoCommit(), // commit exactly what was consumed
	}
	if k.GroupProtocol == KIP848 {
		// kgo speaks KIP-848 only with a balancer the broker can run.
		opts = append(opts, kgo.ServerSideBalancer(), kgo.Balancers(kgo.RangeBalancer()))
	}
	return opts
}

// franzConsume reads c.Consumer.Records records from the start, commits
// them and leaves the group.
func franzConsume(ctx context.Context, bootstrap string, c Client) (int, error) {
	cl, err := kgo.NewClient(franzConsumerOpts(c, bootstrap)...)
	if err != nil {
		return 0, fmt.Errorf("franz-go consumer: %w", err)
	}
	defer cl.Close() // leaves the group
	want, got := c.Consumer.Records, 0
	for got < want {
		fs := cl.PollRecords(ctx, want-got)
		if err := ctx.Err(); err != nil {
			return got, fmt.Errorf("franz-go consume %s: %d of %d records: %w", c.Topic, got, want, err)
		}
		if err := fetchError(fs); err != nil {
			return got, err
		}
		got += fs.NumRecords()
	}
	if err := cl.CommitUncommittedOffsets(ctx); err != nil {
		return got, fmt.Errorf("franz-go commit %s: %w", c.Topic, err)
	}
	return got, nil
}

func fetchError(fs kgo.Fetches) error {
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if ferr == nil {
			ferr = fmt.Errorf("franz-go consume %s[%d]: %w", t, p, err)
		}
	})
	return ferr
}
