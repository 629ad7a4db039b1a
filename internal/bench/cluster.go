package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// connect returns an admin client for the cluster once it has answered
// ApiVersions, or an InputError when it cannot be reached in time.
func connect(ctx context.Context, s *settings) (*kgo.Client, *kmsg.ApiVersionsResponse, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.Bootstrap...), kgo.ClientID("kscope-bench-admin"),
		kgo.DialTimeout(min(s.ConnectTimeout, 10*time.Second)))
	if err != nil {
		return nil, nil, inputErr("bootstrap %v: %v", s.Bootstrap, err)
	}
	cctx, cancel := context.WithTimeout(ctx, s.ConnectTimeout)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(cctx, cl)
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		cl.Close()
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v", s.ConnectTimeout)
		}
		return nil, nil, inputErr("cannot reach the cluster at %v: %v", s.Bootstrap, err)
	}
	return cl, resp, nil
}

// topicInfo is what the run needs to know of a topic.
type topicInfo struct {
	name       string
	partitions int
	replicas   int
}

// ensureTopics creates the topics that do not exist (with the configured
// partitions and replication factor) and waits until every partition of
// every topic has a leader. A refused creation is an InputError.
func ensureTopics(ctx context.Context, cl *kgo.Client, s *settings) ([]topicInfo, error) {
	ctx, cancel := context.WithTimeout(ctx, s.ConnectTimeout)
	defer cancel()
	meta, err := metadata(ctx, cl, s.Topics)
	if err != nil {
		return nil, err
	}
	var create []string
	for _, t := range s.Topics {
		if mt, ok := meta[t]; !ok || mt.ErrorCode == kerr.UnknownTopicOrPartition.Code {
			create = append(create, t)
		} else if err := kerr.ErrorForCode(mt.ErrorCode); err != nil {
			return nil, inputErr("topic %s: %v", t, err)
		}
	}
	if len(create) > 0 {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.TimeoutMillis = int32(s.ConnectTimeout.Milliseconds())
		for _, t := range create {
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = t
			rt.NumPartitions, rt.ReplicationFactor = -1, -1
			if s.Partitions > 0 {
				rt.NumPartitions = s.Partitions
			}
			if s.ReplicationFactor > 0 {
				rt.ReplicationFactor = s.ReplicationFactor
			}
			req.Topics = append(req.Topics, rt)
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("bench: create topics %v: %w", create, err)
		}
		for _, rt := range resp.Topics {
			err := kerr.ErrorForCode(rt.ErrorCode)
			if err == nil || errors.Is(err, kerr.TopicAlreadyExists) {
				continue
			}
			msg := err.Error()
			if rt.ErrorMessage != nil && *rt.ErrorMessage != "" {
				msg += ": " + *rt.ErrorMessage
			}
			return nil, inputErr("cannot create topic %s (partitions %d, replication factor %d): %s",
				rt.Topic, s.Partitions, s.ReplicationFactor, msg)
		}
	}
	// Wait for leaders: a new topic's partitions get theirs shortly after
	// creation.
	for {
		meta, err = metadata(ctx, cl, s.Topics)
		if err != nil {
			return nil, err
		}
		infos, ready := leadersReady(meta, s.Topics)
		if ready {
			return infos, nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, inputErr("topics %v have partitions without a leader after %v", s.Topics, s.ConnectTimeout)
			}
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func metadata(ctx context.Context, cl *kgo.Client, topics []string) (map[string]kmsg.MetadataResponseTopic, error) {
	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.DeadlineExceeded) {
			return nil, inputErr("metadata for %v: no answer in time", topics)
		}
		return nil, fmt.Errorf("bench: metadata for %v: %w", topics, err)
	}
	out := map[string]kmsg.MetadataResponseTopic{}
	for _, t := range resp.Topics {
		if t.Topic != nil {
			out[*t.Topic] = t
		}
	}
	return out, nil
}

func leadersReady(meta map[string]kmsg.MetadataResponseTopic, topics []string) ([]topicInfo, bool) {
	var infos []topicInfo
	for _, t := range topics {
		mt, ok := meta[t]
		if !ok || mt.ErrorCode != 0 || len(mt.Partitions) == 0 {
			return nil, false
		}
		info := topicInfo{name: t, partitions: len(mt.Partitions)}
		for _, p := range mt.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				return nil, false
			}
			info.replicas = max(info.replicas, len(p.Replicas))
		}
		infos = append(infos, info)
	}
	return infos, true
}
