// Package cluster asks a running Kafka cluster for what the other packages
// cannot learn from captures or files alone (topic ids, broker versions).
package cluster

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicIDs asks the cluster at bootstrap for every topic's id.
func TopicIDs(ctx context.Context, bootstrap ...string) (map[[16]byte]string, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap...))
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest() // nil Topics: all topics
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return nil, fmt.Errorf("cluster: metadata from %v: %w", bootstrap, err)
	}
	ids := make(map[[16]byte]string, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.Topic != nil && t.TopicID != ([16]byte{}) {
			ids[t.TopicID] = *t.Topic
		}
	}
	return ids, nil
}
