package clientzoo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AdminClientID is the client id of the zoo's own requests before the
// clients start (CreateTopics, ListOffsets, FindCoordinator, with
// ApiVersions and Metadata), which are no client's.
const AdminClientID = "zoo-admin"

// TopicPartitions is the partition count of the topics CreateTopics
// makes: more than one, so that produce requests name several partitions.
const TopicPartitions = 3

// CreateTopics creates the clients' topics (TopicPartitions partitions,
// the broker's default replication factor), as client AdminClientID, and
// leaves the ones that exist alone. Old clients would auto-create them,
// with one partition and at a moment of their choosing: the zoo decides.
func CreateTopics(ctx context.Context, bootstrap string, clients []Client) error {
	var topics []string
	for _, c := range clients {
		if c.Topic != "" && !slices.Contains(topics, c.Topic) {
			topics = append(topics, c.Topic)
		}
	}
	if len(topics) == 0 {
		return nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(bootstrap), kgo.ClientID(AdminClientID))
	if err != nil {
		return fmt.Errorf("clientzoo: create topics: %w", err)
	}
	defer cl.Close()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = 15000
	for _, t := range topics {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = t, TopicPartitions, -1
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return fmt.Errorf("clientzoo: create topics: %w", err)
	}
	var errs []error
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			errs = append(errs, fmt.Errorf("topic %s: %w", t.Topic, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clientzoo: create topics: %w", err)
	}
	if err := waitTopicsReady(ctx, cl, topics); err != nil {
		return fmt.Errorf("clientzoo: create topics: %w", err)
	}
	if err := warmCoordinators(ctx, cl); err != nil {
		return fmt.Errorf("clientzoo: coordinators: %w", err)
	}
	return nil
}

// warmCoordinators asks for a group and a transaction coordinator until
// both are there. On a new broker, the first such request creates
// __consumer_offsets or __transaction_state (50 partitions each), and
// for seconds every client's FindCoordinator, JoinGroup and
// InitProducerId fails and is retried: noise that would vary from run to
// run in what the clients send. The zoo pays it before they start.
func warmCoordinators(ctx context.Context, cl *kgo.Client) error {
	ctx, cancel := context.WithTimeout(ctx, topicsReadyTimeout)
	defer cancel()
	for _, keyType := range []int8{0, 1} { // group, transaction
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.CoordinatorType = keyType
		req.CoordinatorKey = AdminClientID
		req.CoordinatorKeys = []string{AdminClientID}
		for {
			resp, err := req.RequestWith(ctx, cl)
			if err == nil {
				err = findCoordinatorError(resp)
			}
			if err == nil {
				break
			}
			if !waitUntil(ctx, time.Now().Add(100*time.Millisecond)) {
				return fmt.Errorf("coordinator type %d not ready after %v: %w", keyType, topicsReadyTimeout, err)
			}
		}
	}
	return nil
}

// findCoordinatorError is the error of a FindCoordinator response: at
// the top (v0-v3) or per key (v4+).
func findCoordinatorError(resp *kmsg.FindCoordinatorResponse) error {
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return err
	}
	for _, c := range resp.Coordinators {
		if err := kerr.ErrorForCode(c.ErrorCode); err != nil {
			return err
		}
	}
	return nil
}

// topicsReadyTimeout bounds the wait for new topics' partitions.
const topicsReadyTimeout = 30 * time.Second

// waitTopicsReady waits until every partition of topics answers a
// ListOffsets request. A broker creates a new partition's log after the
// metadata that names it as leader, a second later on a busy machine;
// until then it answers NOT_LEADER_OR_FOLLOWER, and a client with few
// retries (Sarama: 3 of 100 ms) gives up on the records. The zoo waits so
// that every client starts on ready topics.
func waitTopicsReady(ctx context.Context, cl *kgo.Client, topics []string) error {
	ctx, cancel := context.WithTimeout(ctx, topicsReadyTimeout)
	defer cancel()
	req := kmsg.NewPtrListOffsetsRequest()
	for _, t := range topics {
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = t
		for p := range int32(TopicPartitions) {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp = p, -1 // latest
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	for {
		// The client splits the request among the partitions' leaders.
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			if err = listOffsetsError(resp); err == nil {
				return nil
			}
		}
		if !waitUntil(ctx, time.Now().Add(100*time.Millisecond)) {
			return fmt.Errorf("partitions not ready after %v: %w", topicsReadyTimeout, err)
		}
	}
}

func listOffsetsError(resp *kmsg.ListOffsetsResponse) error {
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return fmt.Errorf("%s[%d]: %w", t.Topic, p.Partition, err)
			}
		}
	}
	return nil
}
