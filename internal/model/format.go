package model

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Sizes of the record formats (docs/model.md, "Record formats").
const (
	// V2BatchHeader is a magic 2 batch's header: base offset 8, length 4,
	// partition leader epoch 4, magic 1, CRC 4, attributes 2, last offset
	// delta 4, first and max timestamps 8+8, producer id 8, producer
	// epoch 2, base sequence 4, record count 4.
	V2BatchHeader = 61
	// LegacyMessageV0 is a magic 0 message without its key and value:
	// offset 8, size 4, CRC 4, magic 1, attributes 1, key length 4,
	// value length 4. Magic 1 adds an 8-byte timestamp.
	LegacyMessageV0 = 26
	LegacyMessageV1 = LegacyMessageV0 + 8
)

// versions are the record format and the produce and fetch versions a
// Kafka version's Java client and brokers use.
type versions struct {
	format         int
	produce, fetch int16
}

// kafkaVersions maps "major.minor" to the versions its Java client sends
// (the highest its ApiVersions allow).
var kafkaVersions = []struct {
	v string
	versions
}{
	{"0.8", versions{0, 0, 0}},
	{"0.9", versions{0, 1, 1}},
	{"0.10.0", versions{1, 2, 2}},
	{"0.10", versions{1, 2, 3}}, // 0.10.1, 0.10.2
	{"0.11", versions{2, 3, 5}},
	{"1.0", versions{2, 5, 6}},
	{"1.1", versions{2, 5, 7}},
	{"2.0", versions{2, 6, 8}},
	{"2.1", versions{2, 7, 10}},
	{"2.2", versions{2, 7, 10}},
	{"2.3", versions{2, 7, 11}},
	{"2.4", versions{2, 8, 11}},
	{"2.5", versions{2, 8, 11}},
	{"2.6", versions{2, 8, 11}},
	{"2.7", versions{2, 8, 12}},
	{"2.8", versions{2, 9, 12}},
	{"3.0", versions{2, 9, 12}},
	{"3.1", versions{2, 9, 13}},
	{"3.2", versions{2, 9, 13}},
	{"3.3", versions{2, 9, 13}},
	{"3.4", versions{2, 9, 13}},
	{"3.5", versions{2, 9, 15}},
	{"3.6", versions{2, 9, 15}},
	{"3.7", versions{2, 10, 16}},
	{"3.8", versions{2, 11, 16}},
	{"3.9", versions{2, 11, 17}},
	{"4.0", versions{2, 12, 17}},
	{"4.1", versions{2, 13, 18}},
}

// DefaultKafkaVersion is the version the model assumes unless told.
const DefaultKafkaVersion = "4.1"

// KafkaVersions lists the versions the model knows.
func KafkaVersions() []string {
	var out []string
	for _, k := range kafkaVersions {
		out = append(out, k.v)
	}
	return out
}

// lookupKafkaVersion finds the versions of a Kafka version given as
// "0.10.2.1", "2.8", "4.1.2" and so on.
func lookupKafkaVersion(s string) (versions, error) {
	s = strings.TrimPrefix(strings.TrimSpace(s), "v")
	parts := strings.Split(s, ".")
	for _, p := range parts {
		if _, err := strconv.Atoi(p); err != nil || p == "" {
			return versions{}, fmt.Errorf("kafka version %q: want numbers like 0.10.2 or 3.7", s)
		}
	}
	if len(parts) < 2 {
		parts = append(parts, "0")
	}
	keys := []string{strings.Join(parts[:2], ".")}
	if len(parts) >= 3 {
		keys = append([]string{strings.Join(parts[:3], ".")}, keys...)
	}
	for _, key := range keys {
		for _, k := range kafkaVersions {
			if k.v == key {
				return k.versions, nil
			}
		}
	}
	// Versions newer than the table speak like its newest entry.
	last := kafkaVersions[len(kafkaVersions)-1]
	if cmpVersion(parts, strings.Split(last.v, ".")) > 0 {
		return last.versions, nil
	}
	return versions{}, fmt.Errorf("kafka version %q: not one of %s", s, strings.Join(KafkaVersions(), ", "))
}

func cmpVersion(a, b []string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, _ := strconv.Atoi(a[i])
		y, _ := strconv.Atoi(b[i])
		if x != y {
			return x - y
		}
	}
	return len(a) - len(b)
}

// formatVersions are the produce and fetch versions used with a record
// format set on its own, when the Kafka version's do not carry it.
var formatVersions = [3]versions{{0, 1, 1}, {1, 2, 3}, {2, 3, 5}}

// compatible reports whether produce version p carries record format f:
// magic 2 needs produce v3+, and produce v3+ carries only magic 2.
func compatible(f int, p int16) bool {
	switch f {
	case 2:
		return p >= 3
	case 1:
		return p == 2
	}
	return p <= 2
}

// header is the split of a record header's bytes the model assumes: the
// key is half (rounded down), the value the rest.
func header(size float64) (key, value float64) {
	key = math.Floor(size / 2)
	return key, size - key
}

// varintLen is the length of v, rounded to an integer, as a zigzag varint.
// Record fields are int32 in Kafka; larger values are clamped (Validate
// rejects sizes that large).
func varintLen(v float64) float64 {
	return float64(kbin.VarintLen(int32(min(math.Round(v), math.MaxInt32))))
}

// v2Record is the size of one magic 2 record, its length varint included,
// whose timestamp and offset deltas take tsLen and offLen bytes.
func (in *Inputs) v2Record(tsLen, offLen float64) float64 {
	key := 1.0 // a null key: length -1
	if in.KeySize > 0 {
		key = varintLen(in.KeySize) + in.KeySize
	}
	hk, hv := header(in.HeaderSize)
	headers := varintLen(math.Round(in.Headers)) + in.Headers*(varintLen(hk)+hk+varintLen(hv)+hv)
	body := 1 + tsLen + offLen + key + varintLen(in.MessageSize) + in.MessageSize + headers
	return varintLen(body) + body
}

// v2RecordsBytes is the uncompressed records part of a magic 2 batch of n
// records whose timestamps spread evenly over spanMs milliseconds: record
// i has offset delta i and timestamp delta floor(i*spanMs/n). The varint
// lengths of the deltas change at a few record indexes; between them
// every record has the same size, so the sum is exact without a loop
// over the records.
func (in *Inputs) v2RecordsBytes(n, spanMs int64) float64 {
	cuts := []int64{0, n}
	// Zigzag varints grow a byte at 2^6, 2^13, 2^20, 2^27, 2^34...
	for b := int64(64); b < n; b <<= 7 {
		cuts = append(cuts, b)
	}
	if spanMs > 0 {
		for t := int64(64); t < spanMs; t <<= 7 {
			// The first i with floor(i*spanMs/n) >= t.
			if i := ceilDiv(t, n, spanMs); i < n {
				cuts = append(cuts, i)
			}
		}
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	var sum float64
	for k := 0; k+1 < len(cuts); k++ {
		i := cuts[k]
		ts := tsDelta(i, n, spanMs)
		size := in.v2Record(float64(kbin.VarlongLen(ts)), float64(kbin.VarlongLen(i)))
		sum += float64(cuts[k+1]-i) * size
	}
	return sum
}

// tsDelta is floor(i*spanMs/n), computed without overflow.
func tsDelta(i, n, spanMs int64) int64 {
	return int64(math.Floor(float64(i) * float64(spanMs) / float64(n)))
}

// ceilDiv is the smallest i with floor(i*spanMs/n) >= t, i.e. ceil(t*n/spanMs).
func ceilDiv(t, n, spanMs int64) int64 {
	i := int64(math.Ceil(float64(t) * float64(n) / float64(spanMs)))
	for i > 0 && tsDelta(i-1, n, spanMs) >= t {
		i--
	}
	for tsDelta(i, n, spanMs) < t {
		i++
	}
	return i
}

// legacyMessage is one magic 0 or 1 message with the inputs' key and value.
func (in *Inputs) legacyMessage(format int) float64 {
	over := float64(LegacyMessageV0)
	if format == 1 {
		over = LegacyMessageV1
	}
	return over + in.KeySize + in.MessageSize
}

// batch returns the uncompressed records part and the whole batch as sent
// for n (integer) records per batch.
func (in *Inputs) batch(format int, n, spanMs int64) (records, batch float64) {
	if format < 2 {
		records = float64(n) * in.legacyMessage(format)
		if in.CompressionRatio == 1 {
			// An uncompressed message set: the messages back to back.
			return records, records
		}
		// One wrapper message whose value is the compressed set.
		over := float64(LegacyMessageV0)
		if format == 1 {
			over = LegacyMessageV1
		}
		return records, over + records/in.CompressionRatio
	}
	records = in.v2RecordsBytes(n, spanMs)
	return records, V2BatchHeader + records/in.CompressionRatio
}

// interpolate evaluates f, defined on integers, at a fractional x by
// linear interpolation between floor(x) and ceil(x).
func interpolate(x float64, f func(int64) float64) float64 {
	lo := math.Floor(x)
	a := f(int64(lo))
	if x == lo {
		return a
	}
	b := f(int64(lo) + 1)
	return a + (x-lo)*(b-a)
}

// produceRequest is the size of one produce request frame (4-byte size
// included) carrying parts batches of batchBytes each, for one topic, as
// franz-go's kmsg encodes it for that version.
func (in *Inputs) produceRequest(version int16, parts int64, batchBytes float64) float64 {
	req := kmsg.NewPtrProduceRequest()
	req.Version = version
	req.Acks = -1
	t := kmsg.NewProduceRequestTopic()
	t.Topic = strings.Repeat("t", in.TopicNameLen)
	for range parts {
		p := kmsg.NewProduceRequestTopicPartition()
		p.Records = []byte{}
		t.Partitions = append(t.Partitions, p)
	}
	req.Topics = append(req.Topics, t)
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(strings.Repeat("c", in.ClientIDLen)))
	frame := float64(len(f.AppendRequest(nil, req, 1)))
	return frame + float64(parts)*(batchBytes+bytesPrefixGrowth(req.IsFlexible(), batchBytes))
}

// fetchResponse is the size of one fetch response frame (size, correlation
// id and, for flexible versions, the header's tags included) carrying one
// partition of one topic with batchBytes of record batches.
func (in *Inputs) fetchResponse(version int16, batchBytes float64) float64 {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	t := kmsg.NewFetchResponseTopic()
	t.Topic = strings.Repeat("t", in.TopicNameLen)
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = []byte{}
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	head := 8.0 // size and correlation id
	if resp.IsFlexible() {
		head++ // the response header's empty tag section
	}
	body := float64(len(resp.AppendTo(nil)))
	return head + body + batchBytes + bytesPrefixGrowth(resp.IsFlexible(), batchBytes)
}

// bytesPrefixGrowth is how much longer the length prefix of a byte field
// of n bytes is than that of an empty one: a compact (flexible) field's
// uvarint of n+1 grows with n; an int32 length does not.
func bytesPrefixGrowth(flexible bool, n float64) float64 {
	if !flexible {
		return 0
	}
	return float64(kbin.UvarintLen(uint32(min(math.Round(n)+1, math.MaxUint32)))) - 1
}
