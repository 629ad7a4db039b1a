package lab

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// BrokerConfig describes one single-node KRaft broker.
type BrokerConfig struct {
	// Dir holds everything the broker writes (required).
	Dir string
	// Port is the PLAINTEXT port on 127.0.0.1; 0 picks a free one.
	Port int
	// AdvertisedHost, when set, makes the broker reachable from elsewhere
	// (e.g. another network namespace, see labtest.NewNetns): the
	// PLAINTEXT listener binds every address (0.0.0.0:Port) and
	// advertises AdvertisedHost:Port to clients. The controller stays on
	// 127.0.0.1, and Broker.Addr (127.0.0.1:Port, also what the readiness
	// probe dials) keeps working. Empty: listen on and advertise
	// 127.0.0.1 only.
	AdvertisedHost string
	// LogDirs are Kafka's data dirs (log.dirs); default Dir/data.
	LogDirs []string
	// RequestLog turns on kafka.request.logger at DEBUG into
	// Dir/kafka-request.log, one "Completed request:{json}" line per request.
	RequestLog bool
	// ExtraProps are added to server.properties, overriding the defaults.
	ExtraProps map[string]string
	// LibsDir is the Kafka jars dir; default EnsureLibs.
	LibsDir string
	// HeapMB is the broker's -Xmx in MiB; default 512.
	HeapMB int
	// StartTimeout bounds the wait for the broker to answer; default 60s.
	StartTimeout time.Duration
	// Detach lets the broker outlive this process (kscope lab broker
	// start). Otherwise the kernel kills it when this process dies, so a
	// crashed or timed-out test never leaves a broker behind.
	Detach bool
}

// File names inside BrokerConfig.Dir.
const (
	PropertiesFile = "server.properties"
	Log4jFile      = "log4j2.xml"
	OutFile        = "broker.out"
	FormatOutFile  = "format.out"
	StateFile      = "broker.json"
	RequestLogFile = "kafka-request.log"
)

// nodeID is fixed: a lab cluster is always a single node.
const nodeID = 1

func (c BrokerConfig) withDefaults() (BrokerConfig, error) {
	if c.Dir == "" {
		return c, fmt.Errorf("lab: BrokerConfig.Dir is required")
	}
	dir, err := filepath.Abs(c.Dir)
	if err != nil {
		return c, fmt.Errorf("lab: broker dir: %w", err)
	}
	c.Dir = dir
	if len(c.LogDirs) == 0 {
		c.LogDirs = []string{filepath.Join(dir, "data")}
	}
	logDirs := make([]string, len(c.LogDirs))
	for i, d := range c.LogDirs {
		if logDirs[i], err = filepath.Abs(d); err != nil {
			return c, fmt.Errorf("lab: log dir: %w", err)
		}
	}
	c.LogDirs = logDirs
	if c.HeapMB <= 0 {
		c.HeapMB = 512
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 60 * time.Second
	}
	return c, nil
}

// serverProperties renders server.properties for a broker listening on
// 127.0.0.1:port (0.0.0.0:port with an AdvertisedHost) with its controller
// on 127.0.0.1:controllerPort.
func serverProperties(c BrokerConfig, port, controllerPort int) string {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	caddr := net.JoinHostPort("127.0.0.1", strconv.Itoa(controllerPort))
	listen, advertised := addr, addr
	if c.AdvertisedHost != "" {
		listen = net.JoinHostPort("0.0.0.0", strconv.Itoa(port))
		advertised = net.JoinHostPort(c.AdvertisedHost, strconv.Itoa(port))
	}
	props := map[string]string{
		"process.roles":                  "broker,controller",
		"node.id":                        strconv.Itoa(nodeID),
		"listeners":                      "PLAINTEXT://" + listen + ",CONTROLLER://" + caddr,
		"advertised.listeners":           "PLAINTEXT://" + advertised,
		"controller.listener.names":      "CONTROLLER",
		"inter.broker.listener.name":     "PLAINTEXT",
		"listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
		// Kafka 4.1 with a dynamic quorum (storage formatted --standalone):
		// bootstrap servers, not the static controller.quorum.voters.
		"controller.quorum.bootstrap.servers":              caddr,
		"log.dirs":                                         strings.Join(c.LogDirs, ","),
		"num.partitions":                                   "1",
		"default.replication.factor":                       "1",
		"offsets.topic.replication.factor":                 "1",
		"transaction.state.log.replication.factor":         "1",
		"transaction.state.log.min.isr":                    "1",
		"share.coordinator.state.topic.replication.factor": "1",
		"share.coordinator.state.topic.min.isr":            "1",
		"group.initial.rebalance.delay.ms":                 "0",
		"auto.create.topics.enable":                        "true",
	}
	for k, v := range c.ExtraProps {
		props[k] = v
	}
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# Written by kscope internal/lab; regenerated on every start.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", escapeProp(k), escapeProp(props[k]))
	}
	return b.String()
}

// escapeProp escapes the characters java.util.Properties would interpret.
func escapeProp(s string) string {
	r := strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`, "\t", `\t`)
	return r.Replace(s)
}

// log4jConfig renders the broker's log4j2 XML configuration: everything at
// INFO to stdout (broker.out); with a request log path, kafka.request.logger
// at DEBUG to that file only (additivity off keeps it out of broker.out).
// The request file carries an RFC 3339 timestamp before each message so
// entries can be lined up with packet captures.
func log4jConfig(requestLog string) string {
	var b strings.Builder
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?>
<!-- Written by kscope internal/lab. -->
<Configuration status="warn">
  <Appenders>
    <Console name="STDOUT" target="SYSTEM_OUT">
      <PatternLayout pattern="[%d] %p %m (%c)%n"/>
    </Console>
`)
	if requestLog != "" {
		b.WriteString(`    <File name="REQUESTS" fileName="` + xmlAttr(requestLog) + `" append="true" immediateFlush="true">
      <PatternLayout pattern="%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %m%n"/>
    </File>
`)
	}
	b.WriteString(`  </Appenders>
  <Loggers>
    <Root level="INFO">
      <AppenderRef ref="STDOUT"/>
    </Root>
`)
	if requestLog != "" {
		b.WriteString(`    <Logger name="kafka.request.logger" level="DEBUG" additivity="false">
      <AppenderRef ref="REQUESTS"/>
    </Logger>
`)
	}
	b.WriteString(`  </Loggers>
</Configuration>
`)
	return b.String()
}

func xmlAttr(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // escapes quotes too; a Builder never fails
	return b.String()
}

// NewClusterID returns a random KRaft cluster id in the form
// `kafka-storage.sh random-uuid` prints: 16 random bytes, URL-safe base64
// without padding.
func NewClusterID() (string, error) {
	for {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", fmt.Errorf("lab: cluster id: %w", err)
		}
		id := base64.RawURLEncoding.EncodeToString(b[:])
		// Like Kafka's Uuid.randomUuid: an id starting with '-' would be
		// taken for an option by the storage tool's argument parser.
		if !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}
