package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ReadyClientID is the client id of the readiness probe; its requests show
// up in the request log and can be filtered out by it.
const ReadyClientID = "kscope-lab-ready"

// waitReady polls until the broker at addr accepts connections and answers
// a Metadata request listing itself (node id) and n brokers in all. An
// open port alone is not enough: the listener is up before the broker has
// registered with the controller and been unfenced, and until then auto
// topic creation and produce fail. exited is closed when the broker process
// dies, which ends the wait early.
func waitReady(ctx context.Context, addr string, id, n int, exited <-chan struct{}) error {
	var cl *kgo.Client
	defer func() {
		if cl != nil {
			cl.Close()
		}
	}()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-exited:
			return errors.New("broker process exited")
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%w (last: %v)", ctx.Err(), last)
			}
			return ctx.Err()
		case <-tick.C:
		}
		conn, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err != nil {
			last = err
			continue
		}
		conn.Close()
		if cl == nil {
			if cl, err = kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(ReadyClientID)); err != nil {
				return fmt.Errorf("kafka client: %w", err)
			}
		}
		if last = probeMetadata(ctx, cl, id, n); last == nil {
			return nil
		}
	}
}

// probeMetadata asks the seed broker (not any broker the client learnt
// of) for metadata and checks it lists broker id and n brokers in all.
func probeMetadata(ctx context.Context, cl *kgo.Client, id, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return errors.New("metadata: no seed broker")
	}
	req := kmsg.NewPtrMetadataRequest() // no topics: brokers and controller only
	kresp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	resp := kresp.(*kmsg.MetadataResponse)
	self := false
	for _, b := range resp.Brokers {
		self = self || b.NodeID == int32(id)
	}
	switch {
	case !self:
		return fmt.Errorf("metadata: broker %d not registered yet", id)
	case len(resp.Brokers) < n:
		return fmt.Errorf("metadata: %d of %d brokers registered", len(resp.Brokers), n)
	}
	return nil
}
