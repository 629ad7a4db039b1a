package clientzoo

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDefaultValid: every client of the zoo passes Validate, and every
// runner accepts its configuration.
func TestDefaultValid(t *testing.T) {
	until := time.Now().Add(time.Minute)
	for _, c := range Default("zoo") {
		if err := c.Validate(); err != nil {
			t.Error(err)
			continue
		}
		var err error
		switch c.Library {
		case Java:
			_, err = javaArgs(c, "127.0.0.1:9092", until)
		case Librdkafka, KafkaPython:
			_, err = pythonJobFor(c, "127.0.0.1:9092", time.Minute)
		case Sarama:
			_, err = saramaArgs(c, "127.0.0.1:9092", time.Minute)
		case FranzGo:
			_, err = franzProducerOpts(c, "127.0.0.1:9092", time.Minute)
		}
		if err != nil {
			t.Errorf("%s: %v", c.Kind, err)
		}
	}
}

// TestDefaultDistinct: no two clients of the zoo share a client id, a
// producer configuration or a consumer's fetch settings, so that a
// decoder that mixed two clients up would be caught.
func TestDefaultDistinct(t *testing.T) {
	ids, producers, consumers := map[string]string{}, map[Producer]string{}, map[[2]int]string{}
	for _, c := range Default("zoo") {
		if other, ok := ids[c.ClientID]; ok {
			t.Errorf("%s and %s share client id %s", c.Kind, other, c.ClientID)
		}
		ids[c.ClientID] = c.Kind
		if p := c.Producer; p != nil {
			key := Producer{Acks: p.Acks, Compression: p.Compression, Idempotent: p.Idempotent, Transactional: p.Transactional, BatchSize: p.BatchSize, LingerMs: p.LingerMs}
			if other, ok := producers[key]; ok {
				t.Errorf("%s and %s share the producer configuration %+v", c.Kind, other, key)
			}
			producers[key] = c.Kind
		}
		if k := c.Consumer; k != nil {
			key := [2]int{k.FetchMaxWaitMs, k.FetchMinBytes}
			if other, ok := consumers[key]; ok {
				t.Errorf("%s and %s share fetch settings %v", c.Kind, other, key)
			}
			consumers[key] = c.Kind
		}
	}
	if len(ids) < 10 {
		t.Errorf("the zoo has %d clients", len(ids))
	}
}

func TestValidateRefuses(t *testing.T) {
	good := func() Client {
		return Client{Kind: "k", ClientID: "id", Library: FranzGo, Topic: "t",
			Producer: &Producer{Acks: -1, Compression: "zstd", Idempotent: true, BatchSize: 1, Records: 1, RecordSize: 1},
			Consumer: &Consumer{Group: "g", GroupProtocol: Classic, FetchMaxWaitMs: 1, FetchMinBytes: 1, Records: 1}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("the base case: %v", err)
	}
	cases := []struct {
		name   string
		change func(*Client)
		want   string
	}{
		{"no client id", func(c *Client) { c.ClientID = "" }, "empty ClientID"},
		{"nothing to do", func(c *Client) { c.Producer, c.Consumer = nil, nil }, "neither Producer nor Consumer"},
		{"no topic", func(c *Client) { c.Topic = "" }, "no Topic"},
		{"acks 2", func(c *Client) { c.Producer.Acks = 2 }, "acks 2"},
		{"codec", func(c *Client) { c.Producer.Compression = "brotli" }, "compression"},
		{"idempotent acks 1", func(c *Client) { c.Producer.Acks = 1 }, "needs acks -1"},
		{"transactional only", func(c *Client) { c.Producer.Idempotent, c.Producer.Transactional = false, true }, "is idempotent"},
		{"unbounded records", func(c *Client) { c.Producer.Records = 10_000_000 }, "records"},
		{"no batch size", func(c *Client) { c.Producer.BatchSize = 0 }, "BatchSize"},
		{"no group", func(c *Client) { c.Consumer.Group = "" }, "without Group"},
		{"group protocol", func(c *Client) { c.Consumer.GroupProtocol = "eager" }, "group protocol"},
		{"KIP-848 without MinBroker", func(c *Client) { c.Consumer.GroupProtocol = KIP848 }, "MinBroker"},
		{"bad MinBroker", func(c *Client) { c.MinBroker = "four" }, "release"},
		{"storm without load", func(c *Client) { c.Library, c.Producer, c.Consumer = Storm, nil, nil }, "without Storm"},
		{"storm unbounded", func(c *Client) {
			c.Library, c.Producer, c.Consumer = Storm, nil, nil
			c.Storm = &StormLoad{Pattern: Reconnect, Count: 1 << 30, PerSecond: 1}
		}, "storm of"},
		{"storm pattern", func(c *Client) {
			c.Library, c.Producer, c.Consumer = Storm, nil, nil
			c.Storm = &StormLoad{Pattern: "flood", Count: 1, PerSecond: 1}
		}, "storm pattern"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := good()
			tc.change(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestJavaArgs: the properties follow the declaration, and what an old
// kafka-clients lacks is left out or refused.
func TestJavaArgs(t *testing.T) {
	until := time.Now().Add(30 * time.Second)
	clients := Default("zoo")
	byKind := map[string]Client{}
	for _, c := range clients {
		byKind[c.Kind] = c
	}
	cur, err := javaArgs(byKind["java-4.1.2"], "b:1", until)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"acks=all", "compression.type=zstd", "enable.idempotence=true", "batch.size=32768",
		"linger.ms=20", "transactional.id=zoo-java-4.1.2-txn", "group.protocol=classic", "fetch.max.wait.ms=250",
		"fetch.min.bytes=1024", "client.id=zoo-java-4.1.2", "--"} {
		if !slices.Contains(cur, want) {
			t.Errorf("java-4.1.2: no %q in %q", want, cur)
		}
	}
	old := byKind["java-"+OldJavaVersion]
	args, err := javaArgs(old, "b:1", until)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range args {
		if strings.HasPrefix(a, "delivery.timeout.ms=") || strings.HasPrefix(a, "group.protocol=") {
			t.Errorf("java-%s: %q, which kafka-clients %s does not know", OldJavaVersion, a, OldJavaVersion)
		}
	}
	old.Producer.Compression = "zstd"
	if _, err := javaArgs(old, "b:1", until); err == nil {
		t.Errorf("java-%s with zstd: no error", OldJavaVersion)
	}
	old.Producer.Compression = "gzip"
	old.Consumer.GroupProtocol, old.MinBroker = KIP848, kip848At
	if _, err := javaArgs(old, "b:1", until); err == nil {
		t.Errorf("java-%s in a KIP-848 group: no error", OldJavaVersion)
	}
}

// TestPythonJobs: librdkafka's pin turns ApiVersions off, kafka-python's
// becomes its api_version, and "none" is kafka-python's None.
func TestPythonJobs(t *testing.T) {
	byKind := map[string]Client{}
	for _, c := range Default("zoo") {
		byKind[c.Kind] = c
	}
	rd, err := pythonJobFor(byKind["librdkafka-noapiversion"], "b:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, conf := range []map[string]any{rd.Producer, rd.Consumer} {
		if conf["api.version.request"] != false || conf["broker.version.fallback"] != "0.9.0" {
			t.Errorf("librdkafka-noapiversion: %v", conf)
		}
	}
	if rd.Producer["acks"] != 1 || rd.Producer["compression.type"] != "snappy" || rd.Consumer["fetch.wait.max.ms"] != 350 {
		t.Errorf("librdkafka-noapiversion: %v / %v", rd.Producer, rd.Consumer)
	}
	def, err := pythonJobFor(byKind["librdkafka"], "b:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := def.Producer["api.version.request"]; ok {
		t.Errorf("librdkafka (defaults): %v", def.Producer)
	}
	kp := byKind["kafka-python-0.10.1"]
	job, err := pythonJobFor(kp, "b:1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if v := job.Producer["api_version"]; !slices.Equal(v.([]int), []int{0, 10, 1}) || job.Producer["acks"] != "all" {
		t.Errorf("kafka-python: %v", job.Producer)
	}
	kp.Producer.Compression = "none"
	if job, _ = pythonJobFor(kp, "b:1", time.Minute); job.Producer["compression_type"] != nil {
		t.Errorf("kafka-python without compression: compression_type %v, want None", job.Producer["compression_type"])
	}
}

func TestSaramaArgs(t *testing.T) {
	for _, c := range Default("zoo") {
		if c.Library != Sarama {
			continue
		}
		args, err := saramaArgs(c, "b:1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"-version=" + c.Pin, "-acks=-1", "-compression=" + c.Producer.Compression, "-produce",
			"-fetch-max-wait-ms=" + itoa(c.Consumer.FetchMaxWaitMs), "-group=" + c.Consumer.Group} {
			if !slices.Contains(args, want) {
				t.Errorf("%s: no %q in %q", c.Kind, want, args)
			}
		}
		c.Pin = ""
		if _, err := saramaArgs(c, "b:1", time.Minute); err == nil {
			t.Errorf("%s without Pin: no error", c.Kind)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestPinnedReleases: the releases the zoo declares are the ones its
// files pin.
func TestPinnedReleases(t *testing.T) {
	reqs := readFile(t, "../../../lab/python/requirements.txt")
	for _, want := range []string{"confluent-kafka==" + ConfluentKafkaVersion, "kafka-python==" + KafkaPythonVersion} {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).MatchString(reqs) {
			t.Errorf("lab/python/requirements.txt does not pin %s", want)
		}
	}
	mod := readFile(t, "sarama/go.mod")
	if !strings.Contains(mod, "github.com/IBM/sarama "+SaramaVersion+"\n") {
		t.Errorf("sarama/go.mod does not require github.com/IBM/sarama %s", SaramaVersion)
	}
	script := readFile(t, "../../../scripts/kafka-clients-old.sh")
	if !strings.Contains(script, `version="${1:-`+OldJavaVersion+`}"`) {
		t.Errorf("scripts/kafka-clients-old.sh does not default to %s", OldJavaVersion)
	}
}

func readFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.FromSlash(rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseRelease(t *testing.T) {
	cases := []struct {
		in   string
		want release
		ok   bool
	}{
		{"4.1.2", release{4, 1, 2}, true},
		{"0.10.2.0", release{0, 10, 2}, true},
		{"2.8", release{2, 8, 0}, true},
		{"4.0.0-rc1", release{4, 0, 0}, true},
		{"", release{}, false},
		{"four", release{}, false},
		{"1.2.3.4.5", release{}, false},
		{"99999.1.1", release{}, false},
	}
	for _, tc := range cases {
		got, err := parseRelease(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseRelease(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
	if !atLeast("4.1.2", "4.0.0") || atLeast("3.9.1", "4.0.0") || !atLeast("4.0.0", "4.0.0") || atLeast("x", "1.0.0") {
		t.Error("atLeast")
	}
}

// TestResultWriter: result lines are found across writes, other output
// is passed on, and what a client prints cannot grow without bound.
func TestResultWriter(t *testing.T) {
	cases := []struct {
		name   string
		writes []string
		want   []string
	}{
		{"one line", []string{"zoo-result {\"produced\":1}\n"}, []string{`{"produced":1}`}},
		{"split", []string{"log\nzoo-res", "ult {\"consumed\"", ":2}\nmore\n"}, []string{`{"consumed":2}`}},
		{"no newline yet", []string{"zoo-result {}"}, nil},
		{"not at line start", []string{"x zoo-result {}\n"}, nil},
		{"too many", []string{strings.Repeat("zoo-result {}\n", maxResults+5)}, slices.Repeat([]string{"{}"}, maxResults)},
		{"long line cut", []string{"zoo-result " + strings.Repeat("x", 2*maxLine) + "\n"}, []string{strings.Repeat("x", maxLine-len(resultPrefix))}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := &resultWriter{tail: &tailBuffer{}}
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write: %d, %v", n, err)
				}
			}
			if !slices.Equal(w.lines, tc.want) {
				t.Errorf("lines %.80q, want %.80q", w.lines, tc.want)
			}
			if tail := w.tail.String(); len(tail) > outputLimit || !strings.HasSuffix(strings.Join(tc.writes, ""), tail) {
				t.Errorf("tail of %d bytes is not the output's", len(tail))
			}
		})
	}
}
