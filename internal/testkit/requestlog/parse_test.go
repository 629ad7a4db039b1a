package requestlog

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// testdata/kafka-4.1.2-request.log is real output of a Kafka 4.1.2 broker
// run by internal/lab (ProducerPerformance + ConsoleConsumer, lz4).
func TestParseRealLog(t *testing.T) {
	f, err := os.Open("testdata/kafka-4.1.2-request.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 8 {
		t.Fatalf("got %d entries, want 8", len(entries))
	}

	p := entries[3]
	want := Entry{
		APIKey: KeyProduce, APIName: "PRODUCE", APIVersion: 13, CorrelationID: 7,
		ClientID:   "perf-producer-client",
		Connection: "127.0.0.1:19092-127.0.0.1:57688-2-0",
		BrokerAddr: "127.0.0.1:19092", ClientAddr: "127.0.0.1:57688",
		TotalTimeMs: 44.228, RequestQueueTimeMs: 3.56, LocalTimeMs: 40.301,
		ResponseQueueTimeMs: 0.115, SendTimeMs: 0.251,
		Listener: "PLAINTEXT", SecurityProtocol: "PLAINTEXT", Principal: "User:ANONYMOUS",
		SoftwareName: "apache-kafka-java", SoftwareVersion: "4.1.2",
	}
	got := p
	got.Time, got.TopicPartitions, got.Request, got.Response = time.Time{}, nil, nil, nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("produce entry:\n got %+v\nwant %+v", got, want)
	}
	if p.Time.Format("2006-01-02T15:04:05.000Z07:00") != "2026-11-21T20:04:34.698Z" {
		t.Errorf("time = %v", p.Time)
	}
	// Produce v13 names the topic by id only; the id is resolved from the
	// Metadata/CreateTopics responses earlier in the log.
	wantTP := []TopicPartition{{Topic: "perf1", TopicID: "nh7N0Uo2T02ukM1XC_KXLA", Partition: 0}}
	if !slices.Equal(p.TopicPartitions, wantTP) {
		t.Errorf("produce partitions = %+v, want %+v", p.TopicPartitions, wantTP)
	}

	var fetches int
	for _, e := range entries {
		// An incremental fetch with nothing changed lists no partitions.
		if e.APIKey == KeyFetch && e.ClientID == "console-consumer" && len(e.TopicPartitions) > 0 {
			fetches++
			if !slices.Equal(e.TopicPartitions, wantTP) {
				t.Errorf("fetch %d partitions = %+v", e.CorrelationID, e.TopicPartitions)
			}
		}
	}
	if fetches != 2 {
		t.Errorf("%d console-consumer fetches naming partitions, want 2", fetches)
	}
	if c := entries[2]; c.APIName != "CREATE_TOPICS" || !c.IsForwarded || c.Listener != "CONTROLLER" {
		t.Errorf("create topics entry: %+v", c)
	}
}

func TestParseVariants(t *testing.T) {
	log := strings.Join([]string{
		"some unrelated line",
		// Kafka's default pattern, old produce version naming topics, IPv6.
		`[2024-01-02 03:04:05,678] DEBUG Completed request:{"requestHeader":{"requestApiKey":0,"requestApiVersion":9,"correlationId":5,"clientId":null},` +
			`"request":{"topicData":[{"name":"t1","partitionData":[{"index":0},{"index":2}]}],"future":[1,2]},` +
			`"connection":"0:0:0:0:0:0:0:1:9092-0:0:0:0:0:0:0:1:40000-0","totalTimeMs":1,"newField":{"x":1}} (kafka.request.logger)`,
		// Old fetch version naming topics.
		`2024-01-02T03:04:06Z Completed request:{"requestHeader":{"requestApiKey":1,"requestApiVersion":12,"correlationId":6,"clientId":"c"},` +
			`"request":{"topics":[{"topic":"t2","partitions":[{"partition":1}]}]},"connection":"10.0.0.1:9092-10.0.0.2:5-1-3"}`,
		// Torn last line (no newline): ignored.
		`2024-01-02T03:04:07Z Completed request:{"requestHeader":{"requestApiKey":1`,
	}, "\n")
	entries, err := Parse(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Fatalf("got %d entries, want 2", len(entries))
	}
	p, f := entries[0], entries[1]
	if p.ClientID != "" || p.BrokerAddr != "[::1]:9092" || p.ClientAddr != "[::1]:40000" || p.TotalTimeMs != 1 || p.Time.IsZero() {
		t.Errorf("produce: %+v", p)
	}
	if want := []TopicPartition{{Topic: "t1"}, {Topic: "t1", Partition: 2}}; !slices.Equal(p.TopicPartitions, want) {
		t.Errorf("produce partitions %+v, want %+v", p.TopicPartitions, want)
	}
	if want := []TopicPartition{{Topic: "t2", Partition: 1}}; !slices.Equal(f.TopicPartitions, want) || f.ClientAddr != "10.0.0.2:5" {
		t.Errorf("fetch: %+v", f)
	}

	// A malformed line in the middle is an error.
	if _, err := Parse(strings.NewReader("x Completed request:{oops\nmore\n")); err == nil {
		t.Error("malformed line: no error")
	}
}

// testdata/kafka-3.9.1-deprecated.log is real output of a Kafka 3.9.1
// broker run by internal/lab: Produce v2 from Sarama told the broker is
// 0.10.2, which the broker marks deprecated (KIP-896), then Produce v10
// from Sarama told it is 3.9, which it does not.
func TestParseDeprecated(t *testing.T) {
	f, err := os.Open("testdata/kafka-3.9.1-deprecated.log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		client     string
		version    int16
		deprecated bool
	}
	var gots []got
	for _, e := range entries {
		gots = append(gots, got{e.ClientID, e.APIVersion, e.Deprecated})
	}
	want := []got{{"zoo-sarama-0.10.2", 2, true}, {"zoo-sarama-3.9", 10, false}}
	if !slices.Equal(gots, want) {
		t.Fatalf("got %+v, want %+v", gots, want)
	}
}
