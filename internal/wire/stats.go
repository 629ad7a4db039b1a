package wire

// Stats counts what the decoder saw and what it could not use. Every byte
// or request that was skipped is counted here, so that results can be
// judged honestly.
type Stats struct {
	Packets     int64 `json:"packets"`      // TCP segments on Kafka ports
	Bytes       int64 `json:"bytes"`        // TCP payload bytes on Kafka ports
	Connections int64 `json:"connections"`  // TCP connections seen
	Requests    int64 `json:"requests"`     // request frames whose header decoded
	Responses   int64 `json:"responses"`    // response frames paired with a request
	NoResponse  int64 `json:"no_response"`  // acks=0 produce requests (no response expected)
	Unanswered  int64 `json:"unanswered"`   // requests with no response by the end of the capture or connection
	Unpaired    int64 `json:"unpaired"`     // responses whose correlation id matched no request
	UnknownAPIs int64 `json:"unknown_apis"` // requests with an API key or version kmsg does not know

	SkippedBytes int64 `json:"skipped_bytes"` // bytes lost in gaps or discarded while resynchronising
	Gaps         int64 `json:"gaps"`          // holes in TCP streams (lost segments, mid-stream starts)
	Resyncs      int64 `json:"resyncs"`       // times a stream lost frame sync
	Partial      int64 `json:"partial"`       // requests or responses with bytes lost: in a gap, or after the end of the capture (Unfinished)
	DecodeErrors int64 `json:"decode_errors"` // bodies of known APIs that failed to decode
	BatchErrors  int64 `json:"batch_errors"`  // record batch sequences that failed to decode
	Oversized    int64 `json:"oversized"`     // frames larger than the keep limit or MaxFrameBytes: timed, not decoded
	// Unfinished counts frames cut off by the end of the capture or of
	// their connection (counted in Partial too): neither decoded nor
	// paired.
	Unfinished int64 `json:"unfinished"`
	// OverBudget counts frames whose body was not kept because the frames
	// in progress on all connections held Config.MaxPartialBytes: not
	// decoded (counted in Partial too).
	OverBudget int64 `json:"over_budget"`
	// ClockStepped counts answered requests whose response is timestamped
	// before them: the capture's clock stepped back between the two.
	// Their events are flagged (event.Request.ClockStep) and their times
	// are no latency.
	ClockStepped int64 `json:"clock_stepped"`
	Evicted      int64 `json:"evicted"`               // requests dropped from a full in-flight table
	SASLTokens   int64 `json:"sasl_tokens,omitempty"` // raw SASL tokens (after a SaslHandshake v0), not requests
	// IDsNotHeld counts produce requests whose message ids were not read
	// because the bytes held for slow requests' ids were at their bound
	// (Config.MessageIDsMinLatency).
	IDsNotHeld int64 `json:"ids_not_held,omitempty"`

	// TLS listeners: connections whose bytes are TLS records. Each is
	// counted as it happens (a live capture's connections last for
	// hours, and these are monotonic counters): when its first record
	// decrypts (TLSDecrypted), when its decryption stops, and when it
	// closes during its handshake. A connection whose decryption stops
	// after records decrypted is counted in TLSDecryptedThenStopped, one
	// that stops before in one of TLSNoKeys, TLSFailed, TLSNotTLS and
	// TLSLost: TLSBuckets splits the connections into disjoint kinds.
	TLSConnections   int64 `json:"tls_connections,omitempty"`
	TLSDecrypted     int64 `json:"tls_decrypted,omitempty"`      // application data decrypted (those stopped later too)
	TLSHandshakeOnly int64 `json:"tls_handshake_only,omitempty"` // closed before any application data
	// TLSDecryptedThenStopped: decrypted, then stopped (a gap no record
	// was found after, a record that did not decrypt, secrets of one
	// direction missing).
	TLSDecryptedThenStopped int64 `json:"tls_decrypted_then_stopped,omitempty"`
	TLSNoKeys               int64 `json:"tls_no_keys,omitempty"` // none decrypted: no secrets for the session, or no handshake in the capture
	TLSFailed               int64 `json:"tls_failed,omitempty"`  // none decrypted: secrets that did not decrypt (a wrong key), or a suite not decrypted
	TLSNotTLS               int64 `json:"tls_not_tls,omitempty"` // none decrypted: bytes that are not TLS records
	TLSLost                 int64 `json:"tls_lost,omitempty"`    // none decrypted: the capture lost bytes of the handshake
	TLSResyncs              int64 `json:"tls_resyncs,omitempty"` // gaps after which the next record was found and decryption went on
	// TLSUndecryptedBytes are TLS bytes not decrypted, not counted in
	// SkippedBytes.
	TLSUndecryptedBytes int64 `json:"tls_undecrypted_bytes,omitempty"`
}

// TLSUndecrypted counts the TLS connections whose decryption stopped
// before any application data decrypted.
func (s Stats) TLSUndecrypted() int64 { return s.TLSNoKeys + s.TLSFailed + s.TLSNotTLS + s.TLSLost }

// TLSStopped counts the TLS connections whose decryption stopped, before
// or after records decrypted: those with a TLSProblem.
func (s Stats) TLSStopped() int64 { return s.TLSUndecrypted() + s.TLSDecryptedThenStopped }

// TLSBuckets splits the TLS connections into disjoint kinds that add up
// to TLSConnections.
type TLSBuckets struct {
	Decrypted         int64 // decrypted, and not stopped (to their end, or so far)
	DecryptedThenStop int64 // decrypted, then stopped
	HandshakeOnly     int64 // closed during the handshake
	NoKeys            int64 // not decrypted: no secrets
	Failed            int64 // not decrypted: secrets that did not decrypt, or a suite not decrypted
	NotTLS            int64 // not decrypted: not TLS records
	Lost              int64 // not decrypted: handshake bytes lost
	InProgress        int64 // still in the handshake or waiting for secrets (a live capture)
}

// TLSBuckets are the TLS connections by what became of them.
func (s Stats) TLSBuckets() TLSBuckets {
	b := TLSBuckets{
		Decrypted: s.TLSDecrypted - s.TLSDecryptedThenStopped, DecryptedThenStop: s.TLSDecryptedThenStopped,
		HandshakeOnly: s.TLSHandshakeOnly, NoKeys: s.TLSNoKeys, Failed: s.TLSFailed, NotTLS: s.TLSNotTLS, Lost: s.TLSLost,
	}
	b.InProgress = s.TLSConnections - b.Decrypted - b.DecryptedThenStop - b.HandshakeOnly - s.TLSUndecrypted()
	return b
}

// Add adds o's counters to s: totals over several decoders (a live
// capture opened again).
func (s *Stats) Add(o Stats) {
	s.Packets += o.Packets
	s.Bytes += o.Bytes
	s.Connections += o.Connections
	s.Requests += o.Requests
	s.Responses += o.Responses
	s.NoResponse += o.NoResponse
	s.Unanswered += o.Unanswered
	s.Unpaired += o.Unpaired
	s.UnknownAPIs += o.UnknownAPIs
	s.SkippedBytes += o.SkippedBytes
	s.Gaps += o.Gaps
	s.Resyncs += o.Resyncs
	s.Partial += o.Partial
	s.DecodeErrors += o.DecodeErrors
	s.BatchErrors += o.BatchErrors
	s.Oversized += o.Oversized
	s.Unfinished += o.Unfinished
	s.OverBudget += o.OverBudget
	s.ClockStepped += o.ClockStepped
	s.Evicted += o.Evicted
	s.SASLTokens += o.SASLTokens
	s.IDsNotHeld += o.IDsNotHeld
	s.TLSConnections += o.TLSConnections
	s.TLSDecrypted += o.TLSDecrypted
	s.TLSHandshakeOnly += o.TLSHandshakeOnly
	s.TLSDecryptedThenStopped += o.TLSDecryptedThenStopped
	s.TLSNoKeys += o.TLSNoKeys
	s.TLSFailed += o.TLSFailed
	s.TLSNotTLS += o.TLSNotTLS
	s.TLSLost += o.TLSLost
	s.TLSResyncs += o.TLSResyncs
	s.TLSUndecryptedBytes += o.TLSUndecryptedBytes
}
