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

// BrokerConfig describes one single-node KRaft broker (a combined
// broker+controller). ClusterConfig describes several.
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
	// Version is the Apache Kafka release to run, e.g. "3.9.1" (see
	// CheckVersion). Default: the release of LibsDir when set; else, on
	// formatted storage, the release it was started with; else
	// KafkaVersion. With LibsDir set the two must agree.
	Version string
	// LibsDir is the Kafka jars dir; default EnsureLibsVersion(Version).
	LibsDir string
	// HeapMB is the broker's -Xmx in MiB; default 512.
	HeapMB int
	// JVMArgs are further JVM options, after -Xmx (e.g. -Xms, -Xlog:gc).
	JVMArgs []string
	// StartTimeout bounds the wait for the broker to answer; default 60s.
	StartTimeout time.Duration
	// Detach lets the broker outlive this process (kscope lab broker
	// start). Otherwise the kernel kills it when this process dies, so a
	// crashed or timed-out test never leaves a broker behind.
	Detach bool
	// Security, when set, adds an SSL and a SASL_SSL listener (see
	// SecurityConfig); nil: PLAINTEXT and CONTROLLER only. Needs Kafka
	// 3.5 or later.
	Security *SecurityConfig
}

// File names inside BrokerConfig.Dir.
const (
	PropertiesFile = "server.properties"
	Log4jFile      = "log4j2.xml"       // Kafka 4.x (log4j2)
	Log4j1File     = "log4j.properties" // Kafka 3.x (reload4j, log4j 1.2)
	OutFile        = "broker.out"
	FormatOutFile  = "format.out"
	StateFile      = "broker.json"
	RequestLogFile = "kafka-request.log"
)

// nodeID is the node.id of a single broker; the nodes of a cluster are
// numbered 1..N.
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
	if c.Security != nil {
		sc := *c.Security // the caller's stays as it was
		if sc.Dir == "" {
			sc.Dir = filepath.Join(dir, TLSDirName)
		}
		if sc.Dir, err = filepath.Abs(sc.Dir); err != nil {
			return c, fmt.Errorf("lab: security dir: %w", err)
		}
		c.Security = &sc
	}
	return c, nil
}

// nodeSpec is one node of a start: its config (withDefaults applied; Dir
// is the node's own dir), its place in the cluster and its ports.
type nodeSpec struct {
	cfg         BrokerConfig
	id, n       int    // node.id, and the number of nodes in the cluster
	version     string // Kafka release
	port, cport int    // PLAINTEXT and CONTROLLER ports on host
	// host is the address both listeners bind: "" for 127.0.0.1, else the
	// node's own address in its namespace (ClusterConfig.Netns).
	host string
	// voters is controller.quorum.voters ("1@127.0.0.1:P,..."); empty for
	// a dynamic single-node quorum (see dynamicQuorum).
	voters string
	// ssl and sasl are the SSL and SASL_SSL ports, and tls what those
	// listeners are configured with; nil without Security.
	ssl, sasl int
	tls       *nodeTLS
}

// replication returns the replication factor and min ISR for a cluster of
// n nodes: every replica on its own node, up to 3, and acks=all surviving
// one node down once there are 3.
func replication(n int) (rf, minISR int) {
	rf = min(n, 3)
	minISR = 1
	if rf >= 3 {
		minISR = 2
	}
	return rf, minISR
}

// serverProperties renders server.properties for node s: listening on
// 127.0.0.1:port (0.0.0.0:port with an AdvertisedHost) with its controller
// on 127.0.0.1:cport, or on the node's own host for both; with Security
// also SSL and SASL_SSL listeners bound the way PLAINTEXT is.
func serverProperties(s nodeSpec) string {
	c := s.cfg
	host := s.host
	if host == "" {
		host = "127.0.0.1"
	}
	caddr := net.JoinHostPort(host, strconv.Itoa(s.cport))
	listen, advertised := listenerAddrs(host, c.AdvertisedHost, s.port)
	listeners := []string{"PLAINTEXT://" + listen, "CONTROLLER://" + caddr}
	advertisedListeners := []string{"PLAINTEXT://" + advertised}
	protocols := "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT"
	if s.tls != nil {
		for _, l := range []struct {
			name string
			port int
		}{{ListenerSSL, s.ssl}, {ListenerSASLSSL, s.sasl}} {
			la, aa := listenerAddrs(host, c.AdvertisedHost, l.port)
			listeners = append(listeners, l.name+"://"+la)
			advertisedListeners = append(advertisedListeners, l.name+"://"+aa)
			protocols += "," + l.name + ":" + l.name
		}
	}
	rf, minISR := replication(max(s.n, 1))
	props := map[string]string{
		"process.roles":                            "broker,controller",
		"node.id":                                  strconv.Itoa(s.id),
		"listeners":                                strings.Join(listeners, ","),
		"advertised.listeners":                     strings.Join(advertisedListeners, ","),
		"controller.listener.names":                "CONTROLLER",
		"inter.broker.listener.name":               "PLAINTEXT",
		"listener.security.protocol.map":           protocols,
		"log.dirs":                                 strings.Join(c.LogDirs, ","),
		"num.partitions":                           "1",
		"default.replication.factor":               strconv.Itoa(rf),
		"offsets.topic.replication.factor":         strconv.Itoa(rf),
		"transaction.state.log.replication.factor": strconv.Itoa(rf),
		"transaction.state.log.min.isr":            strconv.Itoa(minISR),
		"group.initial.rebalance.delay.ms":         "0",
		"auto.create.topics.enable":                "true",
	}
	if s.voters == "" {
		// A dynamic quorum (storage formatted --standalone): bootstrap
		// servers, not the static controller.quorum.voters.
		props["controller.quorum.bootstrap.servers"] = caddr
	} else {
		props["controller.quorum.voters"] = s.voters
	}
	if s.n > 1 {
		props["min.insync.replicas"] = strconv.Itoa(minISR)
	}
	if usesLog4j2(s.version) {
		// Share groups (KIP-932) exist from 4.0; 3.x would warn about
		// unknown configs.
		props["share.coordinator.state.topic.replication.factor"] = strconv.Itoa(rf)
		props["share.coordinator.state.topic.min.isr"] = strconv.Itoa(minISR)
	}
	if s.tls != nil {
		for k, v := range s.tls.serverProps() {
			props[k] = v
		}
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

// listenerAddrs returns the address a listener on port binds and the one
// it advertises: host:port for both, or with an advertised host
// 0.0.0.0:port and advertised:port.
func listenerAddrs(host, advertised string, port int) (listen, adv string) {
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	if advertised == "" {
		return addr, addr
	}
	return net.JoinHostPort("0.0.0.0", strconv.Itoa(port)), net.JoinHostPort(advertised, strconv.Itoa(port))
}

// votersAt renders controller.quorum.voters for nodes 1..len(caddrs),
// node i+1's controller at caddrs[i] (host:port).
func votersAt(caddrs []string) string {
	vs := make([]string, len(caddrs))
	for i, a := range caddrs {
		vs[i] = strconv.Itoa(i+1) + "@" + a
	}
	return strings.Join(vs, ",")
}

// loggingConfig returns the logging config file name and content for
// Kafka release version, and the JVM flag that points the broker at it:
// log4j2 XML for 4.x, log4j 1.2 properties for 3.x.
func loggingConfig(version, dir, requestLog string) (name, content, jvmFlag string) {
	if usesLog4j2(version) {
		p := filepath.Join(dir, Log4jFile)
		return Log4jFile, log4jConfig(requestLog), "-Dlog4j2.configurationFile=" + p
	}
	p := filepath.Join(dir, Log4j1File)
	return Log4j1File, log4j1Config(requestLog), "-Dlog4j.configuration=file:" + p
}

// log4j1Config renders the log4j 1.2 (reload4j) configuration of a 3.x
// broker, equivalent to log4jConfig: everything at INFO to stdout; with a
// request log path, kafka.request.logger at DEBUG to that file only, each
// message after an RFC 3339 timestamp.
func log4j1Config(requestLog string) string {
	var b strings.Builder
	b.WriteString(`# Written by kscope internal/lab.
log4j.rootLogger=INFO, stdout
log4j.appender.stdout=org.apache.log4j.ConsoleAppender
log4j.appender.stdout.layout=org.apache.log4j.PatternLayout
log4j.appender.stdout.layout.ConversionPattern=[%d] %p %m (%c)%n
`)
	if requestLog != "" {
		b.WriteString(`log4j.appender.requestAppender=org.apache.log4j.FileAppender
log4j.appender.requestAppender.File=` + escapeProp(requestLog) + `
log4j.appender.requestAppender.Append=true
log4j.appender.requestAppender.ImmediateFlush=true
log4j.appender.requestAppender.layout=org.apache.log4j.PatternLayout
log4j.appender.requestAppender.layout.ConversionPattern=%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %m%n
log4j.logger.kafka.request.logger=DEBUG, requestAppender
log4j.additivity.kafka.request.logger=false
`)
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
