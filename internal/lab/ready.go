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
// a Metadata request listing itself. An open port alone is not enough: the
// listener is up before the broker has registered with the controller and
// been unfenced, and until then auto topic creation and produce fail.
// exited is closed when the broker process dies, which ends the wait early.
func waitReady(ctx context.Context, addr string, exited <-chan struct{}) error {
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
		if last = probeMetadata(ctx, cl); last == nil {
			return nil
		}
	}
}

func probeMetadata(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req := kmsg.NewPtrMetadataRequest() // no topics: brokers and controller only
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	for _, b := range resp.Brokers {
		if b.NodeID == nodeID {
			return nil
		}
	}
	return fmt.Errorf("metadata: broker %d not registered yet", nodeID)
}
