package clientzoo

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// runStorm runs a misbehaving client written with kgo and kmsg (storm
// patterns: Reconnect, MetadataAll).
func runStorm(ctx context.Context, env Env, c Client, r *Result) error {
	interval := time.Duration(float64(time.Second) / c.Storm.PerSecond)
	switch c.Storm.Pattern {
	case Reconnect:
		return reconnectStorm(ctx, env.Bootstrap, c, interval, r)
	case MetadataAll:
		return metadataStorm(ctx, env.Bootstrap, c, interval, r)
	}
	return fmt.Errorf("storm pattern %q", c.Storm.Pattern)
}

// reconnectStorm opens a connection Count times, each with a new client:
// ApiVersions (kgo's, first on every connection), one Metadata request
// for the client's topic, close.
func reconnectStorm(ctx context.Context, bootstrap string, c Client, interval time.Duration, r *Result) error {
	start := time.Now()
	for i := range c.Storm.Count {
		if !waitUntil(ctx, start.Add(time.Duration(i)*interval)) {
			return fmt.Errorf("storm: %d of %d connections: %w", r.Requests, c.Storm.Count, ctx.Err())
		}
		if err := connectOnce(ctx, bootstrap, c); err != nil {
			return fmt.Errorf("storm: connection %d: %w", i+1, err)
		}
		r.Requests++
	}
	return nil
}

func connectOnce(ctx context.Context, bootstrap string, c Client) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(c.ClientID))
	if err != nil {
		return err
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	if c.Topic != "" {
		t := kmsg.NewMetadataRequestTopic()
		t.Topic = kmsg.StringPtr(c.Topic)
		req.Topics = append(req.Topics, t)
	} else {
		req.Topics = []kmsg.MetadataRequestTopic{} // none, rather than all
	}
	// A seed broker's Request goes to that broker as it is: the client's
	// own Request would take the Metadata over for its metadata cache.
	_, err = cl.SeedBrokers()[0].Request(ctx, req)
	return err
}

// metadataStorm sends Count Metadata requests for all topics (a null
// topic list) on one connection.
func metadataStorm(ctx context.Context, bootstrap string, c Client, interval time.Duration, r *Result) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(c.ClientID))
	if err != nil {
		return err
	}
	defer cl.Close()
	broker := cl.SeedBrokers()[0]
	start := time.Now()
	for i := range c.Storm.Count {
		if !waitUntil(ctx, start.Add(time.Duration(i)*interval)) {
			return fmt.Errorf("storm: %d of %d Metadata requests: %w", r.Requests, c.Storm.Count, ctx.Err())
		}
		req := kmsg.NewPtrMetadataRequest() // Topics nil: all topics
		if _, err := broker.Request(ctx, req); err != nil {
			return fmt.Errorf("storm: Metadata request %d: %w", i+1, err)
		}
		r.Requests++
	}
	return nil
}

// waitUntil sleeps until t; false when ctx ends first.
func waitUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}
