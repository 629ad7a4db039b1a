package lab

import (
	"encoding/base64"
	"encoding/xml"
	"os"
	"regexp"
	"strings"
	"testing"
)

func TestKafkaVersionMatchesPom(t *testing.T) {
	pom, err := os.ReadFile("../../lab/kafka/pom.xml")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`<kafka.version>([^<]+)</kafka.version>`).FindSubmatch(pom)
	if m == nil || string(m[1]) != KafkaVersion {
		t.Fatalf("lab/kafka/pom.xml kafka.version = %q, KafkaVersion = %q", m, KafkaVersion)
	}
}

func TestServerProperties(t *testing.T) {
	cfg, err := BrokerConfig{Dir: "/tmp/b", ExtraProps: map[string]string{"num.partitions": "3", "x.y": `a\b`}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	got := serverProperties(cfg, 9092, 9093)
	for _, want := range []string{
		"process.roles=broker,controller\n",
		"node.id=1\n",
		"listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n",
		"controller.quorum.bootstrap.servers=127.0.0.1:9093\n",
		"log.dirs=/tmp/b/data\n",
		"num.partitions=3\n", // ExtraProps win
		"offsets.topic.replication.factor=1\n",
		"group.initial.rebalance.delay.ms=0\n",
		"x.y=a\\\\b\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("server.properties lacks %q:\n%s", want, got)
		}
	}
}

func TestServerPropertiesAdvertisedHost(t *testing.T) {
	for _, tc := range []struct{ host, listen, advertised string }{
		{"", "PLAINTEXT://127.0.0.1:9092", "PLAINTEXT://127.0.0.1:9092"},
		{"10.1.2.1", "PLAINTEXT://0.0.0.0:9092", "PLAINTEXT://10.1.2.1:9092"},
		{"fd00::1", "PLAINTEXT://0.0.0.0:9092", "PLAINTEXT://[fd00::1]:9092"},
	} {
		cfg, err := BrokerConfig{Dir: "/tmp/b", AdvertisedHost: tc.host}.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		got := serverProperties(cfg, 9092, 9093)
		for _, want := range []string{
			"listeners=" + tc.listen + ",CONTROLLER://127.0.0.1:9093\n",
			"advertised.listeners=" + tc.advertised + "\n",
			"controller.quorum.bootstrap.servers=127.0.0.1:9093\n",
		} {
			if !strings.Contains(got, want) {
				t.Errorf("AdvertisedHost %q: server.properties lacks %q:\n%s", tc.host, want, got)
			}
		}
	}
}

func TestLog4jConfig(t *testing.T) {
	for _, path := range []string{"", `/tmp/a&b"<c>/kafka-request.log`} {
		cfg := log4jConfig(path)
		var v struct {
			Appenders struct {
				File []struct {
					FileName string `xml:"fileName,attr"`
				} `xml:"File"`
			} `xml:"Appenders"`
		}
		if err := xml.Unmarshal([]byte(cfg), &v); err != nil {
			t.Fatalf("log4jConfig(%q) is not XML: %v\n%s", path, err, cfg)
		}
		if path == "" {
			if len(v.Appenders.File) != 0 || strings.Contains(cfg, "kafka.request.logger") {
				t.Errorf("request logger configured without a path:\n%s", cfg)
			}
			continue
		}
		if len(v.Appenders.File) != 1 || v.Appenders.File[0].FileName != path {
			t.Errorf("file appender = %+v, want %q", v.Appenders.File, path)
		}
	}
}

func TestNewClusterID(t *testing.T) {
	id, err := NewClusterID()
	if err != nil {
		t.Fatal(err)
	}
	b, err := base64.RawURLEncoding.DecodeString(id)
	if err != nil || len(b) != 16 || strings.HasPrefix(id, "-") {
		t.Fatalf("cluster id %q: %d bytes, %v", id, len(b), err)
	}
}
