// Package releases answers "would Kafka release R accept request API key K
// at version V?" for every Kafka release kscope names, so that
// `kscope clients --target-version 4.0` can flag each request the target
// would reject: Kafka 4.0 removed the protocol versions of clients older
// than 2.1 (KIP-896), and later releases may remove or add more.
//
// The table (table_gen.go) is generated from each release's own protocol
// definitions, the common/message/*Request.json files of its
// org.apache.kafka:kafka-clients jar (`go generate`, see gen/; the jars come
// from scripts/kafka-clients-jars.sh), and TestTableMatchesJars derives it
// again from the jars and compares. A release accepts a request exactly
// when a Kafka broker at its defaults would let it through
// (ApiVersionManager.isApiEnabled for the broker listener):
//
//   - the API's listeners include "broker": an API served only by
//     controllers ("controller") or only by ZooKeeper-mode brokers
//     ("zkBroker": LeaderAndIsr, UpdateMetadata and the other inter-broker
//     APIs of 3.x) is not served to clients by a broker. For 3.9 the table
//     is that of a KRaft broker; a ZooKeeper-mode 3.9 broker also serves
//     those inter-broker APIs, which clients never send.
//   - validVersions "none" means the API was removed.
//   - latestVersionUnstable: true means the newest version is still being
//     developed and a broker refuses it unless unstable.api.versions.enable
//     is set (a test-only setting), so the accepted maximum is one less; an
//     API whose only version is unstable is not served at all.
//   - ApiVersions is accepted at any version (ApiKeys.isVersionEnabled): a
//     client sends the newest it has, and a broker that does not know that
//     version answers with UNSUPPORTED_VERSION and its version list in a v0
//     response, and the client retries with one they share.
//   - Produce v0-v2 on 4.x: the broker lists them in its ApiVersions
//     response for the sake of old librdkafka (KAFKA-18659) but rejects
//     them, and the definitions say 3-12 or 3-13: the table follows the
//     definitions.
//
// A release name is a minor ("4.0") and stands for its patch releases:
// patch releases keep the protocol versions of their minor, which the
// generator checks for every patch listed in releases.txt (3.9.0-3.9.2,
// 4.1.0-4.1.2, 4.2.0-4.2.2, 4.3.0-4.3.1 each declare the same versions).
// The one exception so far is 4.0.0: it rejected JoinGroup v0-v1, which
// 4.0.1 accepts again for old librdkafka (KAFKA-19444), so "4.0.0" is a
// release of its own and "4.0" is 4.0.1 and later. A patch newer than any the table knows is taken to be
// like the newest one of its minor.
//
// The table says which versions a release's brokers let through. Whether a
// served API then does anything useful can still depend on configuration
// (client telemetry needs a metrics plugin that takes it, share and streams
// groups their feature levels); kscope cannot see that, and an upgrade
// check does not need it.
package releases

//go:generate go run ./gen -list releases.txt -out table_gen.go
