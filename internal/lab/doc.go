// Package lab starts and stops real Apache Kafka brokers for kscope's tests
// and for `kscope lab broker start|stop|status`.
//
// A broker is a single KRaft node (process.roles=broker,controller) run as
// `java -cp LIBS/* kafka.Kafka server.properties` from the jars that
// scripts/kafka-jars.sh resolves from Maven Central (lab/kafka/pom.xml).
// Everything a broker owns lives in its Dir: server.properties, log4j2.xml,
// broker.out (stdout/stderr), broker.json (state for Attach), the data dirs
// and, with RequestLog, kafka-request.log (parsed by package
// internal/lab/requestlog).
package lab
