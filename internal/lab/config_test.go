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
	got := serverProperties(nodeSpec{cfg: cfg, id: 1, n: 1, version: KafkaVersion, port: 9092, cport: 9093})
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
		got := serverProperties(nodeSpec{cfg: cfg, id: 1, n: 1, version: KafkaVersion, port: 9092, cport: 9093})
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

func TestServerPropertiesCluster(t *testing.T) {
	cfg, err := BrokerConfig{Dir: "/tmp/c/node-2"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version     string
		n           int
		want, avoid []string
	}{
		{"4.1.2", 3, []string{
			"node.id=2\n",
			"controller.quorum.voters=1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103\n",
			"default.replication.factor=3\n",
			"offsets.topic.replication.factor=3\n",
			"min.insync.replicas=2\n",
			"transaction.state.log.min.isr=2\n",
			"share.coordinator.state.topic.replication.factor=3\n",
		}, []string{"controller.quorum.bootstrap.servers"}},
		{"3.9.1", 3, []string{
			"controller.quorum.voters=1@127.0.0.1:9101,2@127.0.0.1:9102,3@127.0.0.1:9103\n",
			"default.replication.factor=3\n",
		}, []string{"controller.quorum.bootstrap.servers", "share.coordinator"}},
		{"4.1.2", 2, []string{"default.replication.factor=2\n", "min.insync.replicas=1\n"}, nil},
		{"4.1.2", 5, []string{"default.replication.factor=3\n", "min.insync.replicas=2\n"}, nil},
	} {
		caddrs := []string{"127.0.0.1:9101", "127.0.0.1:9102", "127.0.0.1:9103", "127.0.0.1:9104", "127.0.0.1:9105"}[:tc.n]
		got := serverProperties(nodeSpec{cfg: cfg, id: 2, n: tc.n, version: tc.version, port: 9002, cport: 9102, voters: votersAt(caddrs)})
		for _, w := range tc.want {
			if tc.n != 3 && strings.HasPrefix(w, "controller.quorum.voters") {
				continue
			}
			if !strings.Contains(got, w) {
				t.Errorf("%s x%d: server.properties lacks %q:\n%s", tc.version, tc.n, w, got)
			}
		}
		for _, a := range tc.avoid {
			if strings.Contains(got, a) {
				t.Errorf("%s x%d: server.properties has %q:\n%s", tc.version, tc.n, a, got)
			}
		}
	}
}

func TestQuorumAndLogging(t *testing.T) {
	for _, tc := range []struct {
		version      string
		n            int
		dynamic      bool
		file, flag   string
		requestMatch string
	}{
		{"4.1.2", 1, true, Log4jFile, "-Dlog4j2.configurationFile=/d/log4j2.xml", `<Logger name="kafka.request.logger" level="DEBUG"`},
		{"4.1.2", 3, false, Log4jFile, "-Dlog4j2.configurationFile=/d/log4j2.xml", `<Logger name="kafka.request.logger" level="DEBUG"`},
		{"4.0.0", 1, true, Log4jFile, "-Dlog4j2.configurationFile=/d/log4j2.xml", `<Logger name="kafka.request.logger" level="DEBUG"`},
		{"3.9.1", 1, false, Log4j1File, "-Dlog4j.configuration=file:/d/log4j.properties", "log4j.logger.kafka.request.logger=DEBUG, requestAppender\n"},
	} {
		if got := dynamicQuorum(tc.version, tc.n); got != tc.dynamic {
			t.Errorf("dynamicQuorum(%s, %d) = %v", tc.version, tc.n, got)
		}
		name, content, flag := loggingConfig(tc.version, "/d", "/d/kafka-request.log")
		if name != tc.file || flag != tc.flag || !strings.Contains(content, tc.requestMatch) {
			t.Errorf("loggingConfig(%s) = %s, %s:\n%s", tc.version, name, flag, content)
		}
		if _, content, _ := loggingConfig(tc.version, "/d", ""); strings.Contains(content, "kafka.request.logger") {
			t.Errorf("loggingConfig(%s) without request log configures it:\n%s", tc.version, content)
		}
	}
	cfg := log4j1Config(`/tmp/a b\c/kafka-request.log`)
	if !strings.Contains(cfg, "log4j.appender.requestAppender.File=/tmp/a b\\\\c/kafka-request.log\n") ||
		!strings.Contains(cfg, "log4j.additivity.kafka.request.logger=false\n") {
		t.Errorf("log4j1Config:\n%s", cfg)
	}
}

func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"4.1.2": true, "4.1.1": true, "3.9.1": true, "3.3.0": true, "4.2.0-rc1": true,
		"3.2.3": false, "2.8.0": false, "4.1": false, "latest": false, "": false, "4.1.2;rm": false,
	} {
		if err := CheckVersion(v); (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v", v, err)
		}
	}
}

func TestLibsVersion(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"kafka-clients-3.9.1.jar", "kafka_2.13-3.9.1.jar", "kafka-tools-3.9.1.jar"} {
		if err := os.WriteFile(dir+"/"+f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := LibsVersion(dir); err != nil || v != "3.9.1" {
		t.Errorf("LibsVersion = %q, %v", v, err)
	}
	if v, err := LibsVersion(t.TempDir()); err == nil {
		t.Errorf("LibsVersion of an empty dir = %q", v)
	}
	if st := (state{Libs: dir}); st.version() != "3.9.1" {
		t.Errorf("state without version: %q", st.version())
	}
}

func TestLibsDirFor(t *testing.T) {
	t.Setenv(LibsEnv, "/x/libs")
	t.Setenv("HOME", "/home/u")
	for v, want := range map[string]string{
		"":           "/x/libs",
		KafkaVersion: "/x/libs",
		"3.9.1":      "/home/u/.cache/kscope/kafka-3.9.1/libs",
	} {
		if got, err := LibsDirFor(v); err != nil || got != want {
			t.Errorf("LibsDirFor(%q) = %q, %v; want %q", v, got, err, want)
		}
	}
}

func TestPickPorts(t *testing.T) {
	cfgs := []BrokerConfig{{}, {}, {}}
	prev := []*state{nil, nil, nil}
	ports, cports, err := pickPorts(cfgs, prev)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range append(ports, cports...) {
		if p == 0 || seen[p] {
			t.Fatalf("ports %v %v: zero or repeated", ports, cports)
		}
		seen[p] = true
	}
	// A restart keeps the controller ports (they are in the storage).
	prev = []*state{{Addr: "127.0.0.1:1", ControllerAddr: "127.0.0.1:40001"}, {Addr: "127.0.0.1:2", ControllerAddr: "127.0.0.1:40002"}}
	_, cports, err = pickPorts(cfgs[:2], prev)
	if err != nil || cports[0] != 40001 || cports[1] != 40002 {
		t.Fatalf("restart: cports %v, %v", cports, err)
	}
}
