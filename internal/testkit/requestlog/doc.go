// Package requestlog parses the Kafka broker request log: the lines that
// the logger kafka.request.logger writes at DEBUG, one per completed
// request, "Completed request:{json}". internal/lab writes it to
// Dir/kafka-request.log with an RFC 3339 timestamp prefix; Kafka's default
// pattern "[2006-01-02 15:04:05,000] DEBUG Completed request:{...}
// (kafka.request.logger)" is accepted too.
//
// The JSON (Kafka 4.1) looks like this, trimmed:
//
//	{"isForwarded":false,
//	 "requestHeader":{"requestApiKey":0,"requestApiVersion":13,"correlationId":7,
//	                  "clientId":"perf-producer-client","requestApiKeyName":"PRODUCE"},
//	 "request":{"acks":-1,"timeoutMs":30000,"topicData":[{"topicId":"nh7N0Uo2T02ukM1XC_KXLA",
//	            "partitionData":[{"index":0,"recordsSizeInBytes":185}]}]},
//	 "response":{...},
//	 "connection":"127.0.0.1:19092-127.0.0.1:57688-2-0",
//	 "totalTimeMs":44.228,"requestQueueTimeMs":3.56,"localTimeMs":40.301,
//	 "remoteTimeMs":0.0,"throttleTimeMs":0,"responseQueueTimeMs":0.115,
//	 "sendTimeMs":0.251,"securityProtocol":"PLAINTEXT","principal":"User:ANONYMOUS",
//	 "listener":"PLAINTEXT","clientInformation":{"softwareName":"apache-kafka-java",
//	 "softwareVersion":"4.1.2"},"temporaryMemoryBytes":170}
//
// Produce v13+ and Fetch v13+ name topics by id only, so Parse resolves ids
// to names from Metadata and CreateTopics responses in the same log.
package requestlog
