// Package lab starts and stops real Apache Kafka brokers for kscope's tests
// and for `kscope lab broker start|stop|status`.
//
// A broker is a KRaft node (process.roles=broker,controller) run as
// `java -cp LIBS/* kafka.Kafka server.properties` from the jars that
// scripts/kafka-jars.sh resolves from Maven Central (lab/kafka/pom.xml), of
// the pinned KafkaVersion or another release (BrokerConfig.Version,
// EnsureLibsVersion; 3.x logs through log4j 1, 4.x through log4j2).
// Everything a broker owns lives in its Dir: server.properties, the
// logging config (log4j2.xml or log4j.properties), broker.out
// (stdout/stderr), broker.json (state for Attach), the data dirs and, with
// RequestLog, kafka-request.log (parsed by package internal/testkit/requestlog).
//
// StartCluster runs N such nodes as one cluster (a static controller
// quorum of all of them), node i in Dir/node-<i>, recorded in
// Dir/cluster.json. With ClusterConfig.Netns each node runs in a network
// namespace of its own behind a bridge (netns.go), with ClusterConfig.FS
// each node's log dir is a file system of its own on a loop device
// (loopfs.go), with ClusterConfig.Device on an emulated slow device
// (package slowdisk); isolation.go records, makes and removes them. With
// Security (BrokerConfig, ClusterConfig) every node also has SSL and
// SASL_SSL listeners (security.go, clientprops.go): certificates from a
// CA of the lab's own made with keytool (tlsfiles.go, keytool.go), a PLAIN
// and a SCRAM-SHA-512 user (secrets.go, scram.go), all kept in Dir/tls.
// docs/lab.md has the details.
package lab
