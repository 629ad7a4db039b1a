package requestlog

import "encoding/json"

// Produce request: topicData[].name (v0-12) or .topicId (v13+),
// partitionData[].index.
type produceRequest struct {
	TopicData []struct {
		Name          string `json:"name"`
		TopicID       string `json:"topicId"`
		PartitionData []struct {
			Index int32 `json:"index"`
		} `json:"partitionData"`
	} `json:"topicData"`
}

// Fetch request: topics[].topic (v0-12) or .topicId (v13+),
// partitions[].partition.
type fetchRequest struct {
	Topics []struct {
		Topic      string `json:"topic"`
		TopicID    string `json:"topicId"`
		Partitions []struct {
			Partition int32 `json:"partition"`
		} `json:"partitions"`
	} `json:"topics"`
}

// OffsetCommit request: topics[].name (v0-9) or .topicId (v10+),
// partitions[].partitionIndex.
type offsetCommitRequest struct {
	Topics []struct {
		Name       string `json:"name"`
		TopicID    string `json:"topicId"`
		Partitions []struct {
			PartitionIndex int32 `json:"partitionIndex"`
		} `json:"partitions"`
	} `json:"topics"`
}

// Metadata and CreateTopics responses both have topics[] with name and
// topicId.
type topicsResponse struct {
	Topics []struct {
		Name    *string `json:"name"`
		TopicID string  `json:"topicId"`
	} `json:"topics"`
}

func produceTopics(raw json.RawMessage) []TopicPartition {
	var req produceRequest
	if json.Unmarshal(raw, &req) != nil {
		return nil // lenient: an unexpected shape just yields no partitions
	}
	var tps []TopicPartition
	for _, t := range req.TopicData {
		for _, p := range t.PartitionData {
			tps = append(tps, TopicPartition{Topic: t.Name, TopicID: realID(t.TopicID), Partition: p.Index})
		}
	}
	return tps
}

func fetchTopics(raw json.RawMessage) []TopicPartition {
	var req fetchRequest
	if json.Unmarshal(raw, &req) != nil {
		return nil
	}
	var tps []TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, TopicPartition{Topic: t.Topic, TopicID: realID(t.TopicID), Partition: p.Partition})
		}
	}
	return tps
}

func offsetCommitTopics(raw json.RawMessage) []TopicPartition {
	var req offsetCommitRequest
	if json.Unmarshal(raw, &req) != nil {
		return nil
	}
	var tps []TopicPartition
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			tps = append(tps, TopicPartition{Topic: t.Name, TopicID: realID(t.TopicID), Partition: p.PartitionIndex})
		}
	}
	return tps
}

func realID(id string) string {
	if id == zeroTopicID {
		return ""
	}
	return id
}

func learnTopicIDs(raw json.RawMessage, ids map[string]string) {
	var resp topicsResponse
	if json.Unmarshal(raw, &resp) != nil {
		return
	}
	for _, t := range resp.Topics {
		if t.Name != nil && *t.Name != "" && realID(t.TopicID) != "" {
			ids[t.TopicID] = *t.Name
		}
	}
}

// resolveTopics fills Topic from TopicID after the whole log is read, so
// a Metadata response logged after the request still helps.
func resolveTopics(entries []Entry, ids map[string]string) {
	for i := range entries {
		for j := range entries[i].TopicPartitions {
			tp := &entries[i].TopicPartitions[j]
			if tp.Topic == "" && tp.TopicID != "" {
				tp.Topic = ids[tp.TopicID]
			}
		}
	}
}
