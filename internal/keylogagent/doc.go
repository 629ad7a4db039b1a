// Package keylogagent gets the TLS session keys of a running JVM (a Kafka
// broker) without restarting it: it loads the extract-tls-secrets Java
// agent (name.neykov:extract-tls-secrets:4.0.0, Maven Central) into the
// JVM through the attach mechanism, and the agent appends the secrets of
// every TLS handshake from then on to an NSS key log that internal/tlskeys
// reads, so that a capture of the broker's TLS traffic can be decrypted.
//
// EnsureJar finds or fetches the agent jar (scripts/keylog-agent-jar.sh).
// Attach prepares the key log and loads the agent with
//
//	jcmd PID JVMTI.agent_load /abs/extract-tls-secrets-4.0.0.jar /abs/keylog
//
// JVMTI.agent_load loads a path ending in .jar as a Java agent on JDK 9 and
// later (tested on 17 and 25; a Kafka 4 broker needs 17). jcmd exits 0
// either way; its output ends with "return code: 0" when the agent's
// agentmain returned, 100 when the JVM could not open the jar or find its
// Agent-Class, 102 when agentmain threw; JDK 21+ started with
// -XX:-EnableDynamicAgentLoading answers "Dynamic agent loading is not
// enabled" and a JVM with -XX:+DisableAttachMechanism cannot be reached.
// The JVM itself prints to its stderr (kafkaServer.out for a broker started
// with -daemon):
//
//	OpenJDK 64-Bit Server VM warning: Sharing is only supported for boot loader classes because bootstrap classpath has been appended
//	INFO: Successfully attached agent /abs/extract-tls-secrets-4.0.0.jar. Logging to /abs/keylog.
//
// (JDK 21 and later add four "WARNING: A Java agent has been loaded
// dynamically" lines.) Attach also checks afterwards that the JVM holds the
// jar open, which it does once the agent is on its boot class path.
//
// What attaching means for the broker (docs/tls.md, "Getting the keys from
// a running broker", has the measurements): the agent retransforms two JSSE
// classes (sun.security.ssl.SSLTrafficKeyDerivation.createKeyDerivation and
// sun.security.ssl.SSLSessionImpl.setMasterSecret get a call at their end),
// which stops the JVM twice (RedefineClasses safepoints: 32 and 45 ms on a
// lab broker); only handshakes after the attach are logged, so connections
// that exist already cannot be decrypted until they reconnect, nor can TLS
// 1.2 sessions from before the attach when they are resumed (TLS 1.3
// resumption derives new secrets, which are logged); the agent stays loaded
// until the JVM exits (there is no detach); each handshake costs a few file
// appends (the agent opens, appends to and closes the key log by name once
// per secret, under one lock), no more CPU per handshake once the JIT has
// recompiled the changed code (the first few thousand handshakes after the
// attach cost two to four times as much); and the file grows without bound:
// 632 or 760 bytes per TLS 1.3 handshake (by the suite's hash), 188 per TLS
// 1.2 one. The key log holds secrets: Attach makes it mode 0600, owned by
// the JVM's user, and nothing here prints its contents. Deleting it while
// the agent is loaded makes the JVM create it again with its umask's mode,
// or log a warning with a stack trace for every secret where it cannot:
// truncate it instead.
//
// What the agent writes: TLS 1.3 handshakes give CLIENT_HANDSHAKE_TRAFFIC_SECRET,
// SERVER_HANDSHAKE_TRAFFIC_SECRET, CLIENT_TRAFFIC_SECRET_0 and
// SERVER_TRAFFIC_SECRET_0 lines keyed by the client random. TLS 1.2
// handshakes on JDK 11 and later give only
//
//	RSA Session-ID:<session id> Master-Key:<master secret>
//
// (4.0.0 hooks TLS 1.2 by the client random on JDK 8's Handshaker only),
// which tlskeys reads by session id (Keys.LookupSessionID): the decryptor
// takes the id from the captured ServerHello, as Wireshark does.
//
// Containers: the JVM opens both paths in its own mount namespace. Attach
// checks through /proc/PID/root that the JVM sees the very key log file
// created here and refuses otherwise (a broker in a container, or under
// systemd with PrivateTmp=yes, with the path not shared): give a path that
// is bind-mounted at the same place on both sides. When the JVM cannot read
// the jar where it is (another mount namespace, or root's 0700 home for a
// broker running as kafka), Attach copies it next to the key log, whose
// directory the JVM must reach anyway.
//
// Attaching twice: a second load of the agent installs a second
// transformer, so every secret is written twice from then on, and moves
// all logging to the second load's path. Attach therefore loads the agent
// at most once per JVM: it marks the key log with a comment line naming the
// JVM (pid and start time), and when the JVM already has the agent, returns
// nil if this key log carries that mark (or is the -javaagent option the
// JVM was started with), else ErrAlreadyLoaded. Concurrent Attach calls
// with one key log are serialized with flock; calls with different key
// logs are not.
package keylogagent

import "errors"

// The agent: its Maven coordinates, its jar's name, and the sha1 Maven
// Central publishes for that jar (scripts/keylog-agent-jar.sh pins the same).
const (
	Artifact = "name.neykov:extract-tls-secrets:4.0.0"
	JarName  = "extract-tls-secrets-4.0.0.jar"
	JarSHA1  = "15937ed5f69590881255a19534be9d3edcdd3ed5"
)

// JarEnv names a jar to use instead of the cached one (it may be another
// build, which is not checked against JarSHA1). The jar is fetched there
// when missing.
const JarEnv = "KSCOPE_KEYLOG_AGENT_JAR"

// ErrAlreadyLoaded: the JVM has the agent loaded already, logging to a
// file other than the one asked for. Loading it again would write every
// secret twice, to the new file only; the JVM must restart for a new path.
var ErrAlreadyLoaded = errors.New("the extract-tls-secrets agent is already loaded in this JVM, logging elsewhere")
