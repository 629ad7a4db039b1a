package event

// Producer is what one produce request says of the producer that sent it,
// read from its record batch headers (no record is decompressed): the
// settings kscope clients shows per client, which an operator cannot
// otherwise see for another team's application.
type Producer struct {
	// Batches counts the request's record batches.
	Batches int `json:"batches"`
	// Magic is the lowest record format among them (0, 1 or 2): a magic 0
	// or 1 batch is the message format of clients before Kafka 0.11.
	Magic int8 `json:"magic"`
	// Codec is the batches' compression ("none", "gzip", "snappy", "lz4",
	// "zstd"), "mixed" when they differ.
	Codec string `json:"codec"`
	// ProducerID is the batches' producer id: -1 unless the producer is
	// idempotent (KIP-98), as every magic 0 or 1 batch.
	ProducerID int64 `json:"producer_id"`
	// Transactional is set when a batch belongs to a transaction.
	Transactional bool `json:"transactional,omitempty"`
	// TransactionalID is the request's transactional id (v3+), when it
	// has one.
	TransactionalID string `json:"transactional_id,omitempty"`
}

// Idempotent reports whether the producer writes idempotently.
func (p Producer) Idempotent() bool { return p.Batches > 0 && p.ProducerID >= 0 }

// FetchParams are a Fetch request's settings: how long the broker may
// wait for data and how much it should return.
type FetchParams struct {
	// MaxWaitMs and MinBytes: the broker holds the fetch until MinBytes
	// are there or MaxWaitMs has passed (fetch.max.wait.ms,
	// fetch.min.bytes).
	MaxWaitMs int32 `json:"max_wait_ms"`
	MinBytes  int32 `json:"min_bytes"`
	// MaxBytes bounds the response (fetch.max.bytes; v3+, else 0).
	MaxBytes int32 `json:"max_bytes,omitempty"`
	// IsolationLevel: 0 read_uncommitted, 1 read_committed (v4+).
	IsolationLevel int8 `json:"isolation_level,omitempty"`
	// SessionID and SessionEpoch are the incremental fetch session
	// (KIP-227, v7+): 0 and -1 without a session.
	SessionID    int32 `json:"session_id,omitempty"`
	SessionEpoch int32 `json:"session_epoch,omitempty"`
}

// Group is the consumer group, member and generation a group request
// names.
type Group struct {
	// ID is the group id.
	ID string `json:"id"`
	// MemberID is the member the request is from (empty on a first
	// JoinGroup, or a member's first ConsumerGroupHeartbeat before v1).
	MemberID string `json:"member_id,omitempty"`
	// InstanceID is a static member's group.instance.id (KIP-345).
	InstanceID string `json:"instance_id,omitempty"`
	// Generation is the classic protocol's generation id, or the member
	// epoch of a ConsumerGroupHeartbeat (KIP-848).
	Generation int32 `json:"generation"`
	// ProtocolType is JoinGroup's protocol type ("consumer" for
	// consumers, "connect" for Kafka Connect workers).
	ProtocolType string `json:"protocol_type,omitempty"`
	// SessionTimeoutMs and RebalanceTimeoutMs are the member's timeouts
	// as JoinGroup (or ConsumerGroupHeartbeat's rebalance timeout) sent
	// them; 0 when the request does not carry them.
	SessionTimeoutMs   int32 `json:"session_timeout_ms,omitempty"`
	RebalanceTimeoutMs int32 `json:"rebalance_timeout_ms,omitempty"`
}

// GroupResult is what a group request's response said of the group and
// member: with the request's Group, the timeline of a rebalance.
type GroupResult struct {
	// Generation is JoinGroup's new generation id, or the member epoch a
	// ConsumerGroupHeartbeat response gives (-1 when the response has
	// none: an error, a member fenced).
	Generation int32 `json:"generation"`
	// MemberID is the member id JoinGroup assigned (also with
	// MEMBER_ID_REQUIRED) or ConsumerGroupHeartbeat confirmed.
	MemberID string `json:"member_id,omitempty"`
	// Leader is JoinGroup's leader member id; Protocol the assignor the
	// group chose.
	Leader   string `json:"leader,omitempty"`
	Protocol string `json:"protocol,omitempty"`
	// Members is how many members JoinGroup's response lists (only the
	// leader's lists them: the others get none).
	Members int `json:"members,omitempty"`
	// Assigned is how many partitions a ConsumerGroupHeartbeat response
	// assigns the member (0 when it says nothing new).
	Assigned int `json:"assigned,omitempty"`
}
