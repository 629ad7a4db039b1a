package output

import (
	"encoding/json"
	"math"
	"strconv"
	"time"

	"github.com/kscope-dev/kscope/internal/event"
)

// Hand-written JSON encoders for the events printed by the million, which
// produce exactly what encoding/json produces for the same value (the
// tests compare them byte for byte), and hand anything unusual to
// encoding/json itself.

// AppendJSONString appends s as a JSON string. Plain printable ASCII is
// copied as it is; anything else goes through encoding/json, so that
// escaping (control characters, invalid UTF-8, <, >, &, U+2028) is
// exactly its.
func AppendJSONString(out []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(out, q...)
		}
	}
	out = append(out, '"')
	out = append(out, s...)
	return append(out, '"')
}

// appendJSONFloat appends f as encoding/json does; ok is false for NaN and
// infinities, which it refuses.
func appendJSONFloat(b []byte, f float64) (_ []byte, ok bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return b, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// "1e-07" as "1e-7", like encoding/json.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

// appendJSONTime appends t as time.Time's MarshalJSON does (RFC 3339 with
// nanoseconds); ok is false where MarshalJSON would fail or could differ:
// years outside 0..9999, zone offsets that are not whole minutes under a
// day.
func appendJSONTime(b []byte, t time.Time) (_ []byte, ok bool) {
	if y := t.Year(); y < 0 || y > 9999 {
		return b, false
	}
	if _, off := t.Zone(); off%60 != 0 || off <= -24*3600 || off >= 24*3600 {
		return b, false
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), true
}

// AppendRequestJSON appends r as json.Marshal(r) would, without
// reflection for the common case.
func AppendRequestJSON(b []byte, r *event.Request) ([]byte, error) {
	start := len(b)
	out, ok := appendRequest(b, r)
	if ok {
		return out, nil
	}
	m, err := json.Marshal(r)
	if err != nil {
		return b[:start], err
	}
	return append(b[:start], m...), nil
}

// appendRequest appends r field by field in event.Request's order; ok is
// false when a value needs encoding/json (its caller then uses it).
func appendRequest(b []byte, r *event.Request) (_ []byte, ok bool) {
	if b, ok = appendTimings(b, r); !ok {
		return b, false
	}
	b = AppendJSONString(append(b, `,"client":`...), r.Client)
	b = AppendJSONString(append(b, `,"broker":`...), r.Broker)
	b = AppendJSONString(append(b, `,"api":`...), r.API)
	b = appendJSONInt(b, `,"api_key":`, int64(r.APIKey))
	b = appendJSONInt(b, `,"api_version":`, int64(r.APIVersion))
	b = appendJSONInt(b, `,"correlation_id":`, int64(r.CorrelationID))
	b = AppendJSONString(append(b, `,"client_id":`...), r.ClientID)
	b = appendJSONInt(b, `,"request_bytes":`, int64(r.RequestBytes))
	b = appendJSONInt(b, `,"response_bytes":`, int64(r.ResponseBytes))
	b = appendJSONInt(b, `,"throttle_ms":`, int64(r.ThrottleMs))
	if r.ErrorCode != nil {
		b = appendJSONInt(b, `,"error_code":`, int64(*r.ErrorCode))
	}
	if r.Acks != nil {
		b = appendJSONInt(b, `,"acks":`, int64(*r.Acks))
	}
	if r.ReplicaID != nil {
		b = appendJSONInt(b, `,"replica_id":`, int64(*r.ReplicaID))
	}
	if b, ok = appendTCPSignals(b, r); !ok {
		return b, false
	}
	if b, ok = appendPartitions(b, r.Partitions); !ok {
		return b, false
	}
	if r.SASLMechanism != "" {
		b = AppendJSONString(append(b, `,"sasl_mechanism":`...), r.SASLMechanism)
	}
	if r.Principal != "" {
		b = AppendJSONString(append(b, `,"principal":`...), r.Principal)
	}
	b = appendClientDetails(b, r)
	b = strconv.AppendBool(append(b, `,"answered":`...), r.Answered)
	if r.Partial {
		b = append(b, `,"partial":true`...)
	}
	if r.ClockStep {
		b = append(b, `,"clock_step":true`...)
	}
	return append(b, '}'), true
}

// appendJSONInt appends key (with its leading comma and colon) and v.
func appendJSONInt(b []byte, key string, v int64) []byte {
	return strconv.AppendInt(append(b, key...), v, 10)
}

// appendTimings opens the object with the request's times and the four
// parts of its latency.
func appendTimings(b []byte, r *event.Request) (_ []byte, ok bool) {
	b = append(b, `{"arrival":`...)
	if b, ok = appendJSONTime(b, r.Arrival); !ok {
		return b, false
	}
	if !r.End.IsZero() {
		b = append(b, `,"end":`...)
		if b, ok = appendJSONTime(b, r.End); !ok {
			return b, false
		}
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{`,"latency_ms":`, r.LatencyMs}, {`,"queued_ms":`, r.QueuedMs}, {`,"broker_ms":`, r.BrokerMs}, {`,"response_ms":`, r.ResponseMs}} {
		if b, ok = appendJSONFloat(append(b, f.key...), f.v); !ok {
			return b, false
		}
	}
	return b, true
}

// appendTCPSignals appends the capture's TCP evidence of the request, the
// fields that are not zero.
func appendTCPSignals(b []byte, r *event.Request) (_ []byte, ok bool) {
	if r.Retransmits != 0 {
		b = appendJSONInt(b, `,"retransmits":`, int64(r.Retransmits))
	}
	if r.ResponseRetransmits != 0 {
		b = appendJSONInt(b, `,"response_retransmits":`, int64(r.ResponseRetransmits))
	}
	if r.ZeroWindows != 0 {
		b = appendJSONInt(b, `,"zero_windows":`, int64(r.ZeroWindows))
	}
	if r.BrokerZeroWindows != 0 {
		b = appendJSONInt(b, `,"broker_zero_windows":`, int64(r.BrokerZeroWindows))
	}
	if r.ResponseAckWaitMs != 0 {
		if b, ok = appendJSONFloat(append(b, `,"response_ack_wait_ms":`...), r.ResponseAckWaitMs); !ok {
			return b, false
		}
	}
	return b, true
}

// appendPartitions appends the "partitions" array, when there are any;
// ok is false for one with batch statistics (rare: wire.Config.BatchStats),
// left to encoding/json.
func appendPartitions(b []byte, parts []event.Partition) (_ []byte, ok bool) {
	if len(parts) == 0 {
		return b, true
	}
	b = append(b, `,"partitions":[`...)
	for i := range parts {
		p := &parts[i]
		if p.BatchStats != nil {
			return b, false
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = appendPartition(b, p)
	}
	return append(b, ']'), true
}

// appendPartition appends one partition object (without batch statistics).
func appendPartition(b []byte, p *event.Partition) []byte {
	b = AppendJSONString(append(b, `{"topic":`...), p.Topic)
	if p.TopicID != "" {
		b = AppendJSONString(append(b, `,"topic_id":`...), p.TopicID)
	}
	b = appendJSONInt(b, `,"partition":`, int64(p.Partition))
	b = appendJSONInt(b, `,"records":`, int64(p.Records))
	b = appendJSONInt(b, `,"bytes":`, int64(p.Bytes))
	if len(p.MessageIDs) > 0 {
		b = append(b, `,"message_ids":[`...)
		for j, id := range p.MessageIDs {
			if j > 0 {
				b = append(b, ',')
			}
			b = AppendJSONString(b, id)
		}
		b = append(b, ']')
	}
	if p.Batches != 0 {
		b = appendJSONInt(b, `,"batches":`, int64(p.Batches))
	}
	b = appendJSONInt(b, `,"error_code":`, int64(p.ErrorCode))
	if p.FetchOffset != nil {
		b = appendJSONInt(b, `,"fetch_offset":`, *p.FetchOffset)
	}
	if p.BaseOffset != nil {
		b = appendJSONInt(b, `,"base_offset":`, *p.BaseOffset)
	}
	if p.HighWatermark != nil {
		b = appendJSONInt(b, `,"high_watermark":`, *p.HighWatermark)
	}
	b = appendConsumerOffsets(b, p)
	return append(b, '}')
}

// appendConsumerOffsets appends a partition's consumer-side values, those
// that are set: a fetch response's offsets and times, an OffsetCommit's
// offset.
func appendConsumerOffsets(b []byte, p *event.Partition) []byte {
	for _, f := range [...]struct {
		key string
		v   *int64
	}{
		{`,"first_offset":`, p.FirstOffset}, {`,"last_offset":`, p.LastOffset},
		{`,"first_timestamp_ms":`, p.FirstTimestamp}, {`,"max_timestamp_ms":`, p.MaxTimestamp},
		{`,"log_start_offset":`, p.LogStartOffset}, {`,"committed_offset":`, p.CommittedOffset},
	} {
		if f.v != nil {
			b = appendJSONInt(b, f.key, *f.v)
		}
	}
	return b
}

// appendClientDetails appends what the request says of its client: the
// software it announced, its producer, fetch and group settings, a
// Metadata request for every topic; each only when set.
func appendClientDetails(b []byte, r *event.Request) []byte {
	if r.SoftwareName != "" {
		b = AppendJSONString(append(b, `,"software_name":`...), r.SoftwareName)
	}
	if r.SoftwareVersion != "" {
		b = AppendJSONString(append(b, `,"software_version":`...), r.SoftwareVersion)
	}
	if p := &r.Producer; *p != (event.Producer{}) {
		b = appendJSONInt(b, `,"producer":{"batches":`, int64(p.Batches))
		b = appendJSONInt(b, `,"magic":`, int64(p.Magic))
		b = AppendJSONString(append(b, `,"codec":`...), p.Codec)
		b = appendJSONInt(b, `,"producer_id":`, p.ProducerID)
		if p.Transactional {
			b = append(b, `,"transactional":true`...)
		}
		if p.TransactionalID != "" {
			b = AppendJSONString(append(b, `,"transactional_id":`...), p.TransactionalID)
		}
		b = append(b, '}')
	}
	if f := &r.Fetch; *f != (event.FetchParams{}) {
		b = appendJSONInt(b, `,"fetch":{"max_wait_ms":`, int64(f.MaxWaitMs))
		b = appendJSONInt(b, `,"min_bytes":`, int64(f.MinBytes))
		for _, v := range []struct {
			key string
			v   int64
		}{{`,"max_bytes":`, int64(f.MaxBytes)}, {`,"isolation_level":`, int64(f.IsolationLevel)}, {`,"session_id":`, int64(f.SessionID)}, {`,"session_epoch":`, int64(f.SessionEpoch)}} {
			if v.v != 0 {
				b = appendJSONInt(b, v.key, v.v)
			}
		}
		b = append(b, '}')
	}
	if g := &r.Group; *g != (event.Group{}) {
		b = appendGroup(b, g)
	}
	if g := &r.GroupResult; *g != (event.GroupResult{}) {
		b = appendGroupResult(b, g)
	}
	if r.AllTopics {
		b = append(b, `,"all_topics":true`...)
	}
	return b
}

// appendGroup appends the "group" object.
func appendGroup(b []byte, g *event.Group) []byte {
	b = AppendJSONString(append(b, `,"group":{"id":`...), g.ID)
	for _, s := range []struct{ key, v string }{{`,"member_id":`, g.MemberID}, {`,"instance_id":`, g.InstanceID}} {
		if s.v != "" {
			b = AppendJSONString(append(b, s.key...), s.v)
		}
	}
	b = appendJSONInt(b, `,"generation":`, int64(g.Generation))
	if g.ProtocolType != "" {
		b = AppendJSONString(append(b, `,"protocol_type":`...), g.ProtocolType)
	}
	if g.SessionTimeoutMs != 0 {
		b = appendJSONInt(b, `,"session_timeout_ms":`, int64(g.SessionTimeoutMs))
	}
	if g.RebalanceTimeoutMs != 0 {
		b = appendJSONInt(b, `,"rebalance_timeout_ms":`, int64(g.RebalanceTimeoutMs))
	}
	return append(b, '}')
}

// appendGroupResult appends the "group_result" object.
func appendGroupResult(b []byte, g *event.GroupResult) []byte {
	b = appendJSONInt(b, `,"group_result":{"generation":`, int64(g.Generation))
	for _, s := range [...]struct{ key, v string }{{`,"member_id":`, g.MemberID}, {`,"leader":`, g.Leader}, {`,"protocol":`, g.Protocol}} {
		if s.v != "" {
			b = AppendJSONString(append(b, s.key...), s.v)
		}
	}
	if g.Members != 0 {
		b = appendJSONInt(b, `,"members":`, int64(g.Members))
	}
	if g.Assigned != 0 {
		b = appendJSONInt(b, `,"assigned":`, int64(g.Assigned))
	}
	return append(b, '}')
}
