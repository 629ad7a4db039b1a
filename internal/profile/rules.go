package profile

import (
	"strings"

	"github.com/kscope-dev/kscope/internal/jfr"
)

// Categories, in the order reports list them when shares tie.
const (
	Zstd       = "compression/zstd"
	LZ4        = "compression/lz4"
	Snappy     = "compression/snappy"
	Gzip       = "compression/gzip"
	CRC32C     = "checksum/crc32c"
	CRC32      = "checksum/crc32"
	MD5        = "checksum/md5"
	SHA        = "checksum/sha"
	Digest     = "checksum/digest"
	AESGCM     = "crypto/aes-gcm"
	TLS        = "crypto/tls"
	CryptoMisc = "crypto/other"
	Network    = "network"
	Log        = "log"
	Replicate  = "replication"
	Request    = "request"
	GC         = "gc"
	JIT        = "jit"
	Other      = "other"
	Unsampled  = "unsampled"
)

// CategoryInfo describes a category for reports and docs.
var CategoryInfo = map[string]string{
	Zstd:       "zstd compression and decompression (zstd-jni, Kafka's zstd wrappers)",
	LZ4:        "LZ4 (lz4-java, Kafka's LZ4 block streams, xxHash)",
	Snappy:     "Snappy (snappy-java)",
	Gzip:       "gzip: java.util.zip Deflater/Inflater (zlib)",
	CRC32C:     "CRC32C of record batches",
	CRC32:      "CRC32 and Adler32",
	MD5:        "MD5 digests (e.g. Content-MD5 of tiered-storage uploads)",
	SHA:        "SHA-1/SHA-2/SHA-3 digests",
	Digest:     "message digests whose algorithm is not on the stack",
	AESGCM:     "AES in any mode, GCM's GHASH and counter mode (TLS, object-store clients)",
	TLS:        "TLS engine (handshakes, records) outside the cipher itself",
	CryptoMisc: "other JCE crypto: RSA, EC, other ciphers",
	Network:    "sockets, selectors and Kafka's network layer (including sendfile)",
	Log:        "log append, segments, indexes, record batch validation, file I/O",
	Replicate:  "replica fetchers and the fetch path of ReplicaManager",
	Request:    "request parsing and handling: KafkaApis, ReplicaManager, purgatories, coordinators",
	GC:         "the JVM's CPU outside its Java threads: GC workers, the VM thread (JFR samples only Java threads)",
	JIT:        "JIT compiler threads",
	Other:      "everything else",
	Unsampled:  "threads that used CPU but of which JFR took no sample",
}

// rule maps frames whose "Class.method" starts with prefix (at a name
// boundary: the end, '.' or '$') to a category.
type rule struct {
	prefix, category string
}

// rules decide a sample's category from its frames. For one frame the
// longest matching prefix wins (so SslTransportLayer is TLS, not the rest
// of org.apache.kafka.common.network); for a stack, the innermost frame
// that any rule matches decides (so a CRC32C computed while validating a
// batch in UnifiedLog.append is a checksum, and a HashMap lookup in
// KafkaApis is request handling). Frames no rule names (java.util,
// java.nio, jdk.internal, sun.nio.ch.IOUtil) pass the decision outwards.
var rules = []rule{
	{"com.github.luben.zstd", Zstd},
	{"org.apache.kafka.common.compress.ZstdCompression", Zstd},
	{"org.apache.kafka.common.compress.ZstdFactory", Zstd},
	{"org.apache.kafka.common.record.CompressionType$ZstdConstants", Zstd},
	{"ZSTD_", Zstd}, // native frames, as async-profiler writes them
	{"HUF_", Zstd},
	{"FSE_", Zstd},
	{"net.jpountz", LZ4},
	{"org.apache.kafka.common.compress.Lz4Compression", LZ4},
	{"org.apache.kafka.common.compress.Lz4BlockInputStream", LZ4},
	{"org.apache.kafka.common.compress.Lz4BlockOutputStream", LZ4},
	{"org.apache.kafka.common.compress.KafkaLZ4BlockInputStream", LZ4},
	{"org.apache.kafka.common.compress.KafkaLZ4BlockOutputStream", LZ4},
	{"LZ4_", LZ4},
	{"org.xerial.snappy", Snappy},
	{"org.apache.kafka.common.compress.SnappyCompression", Snappy},
	{"org.apache.kafka.common.compress.SnappyFactory", Snappy},
	{"snappy::", Snappy},
	{"java.util.zip.Deflater", Gzip},
	{"java.util.zip.Inflater", Gzip},
	{"java.util.zip.GZIPInputStream", Gzip},
	{"java.util.zip.GZIPOutputStream", Gzip},
	{"java.util.zip.DeflaterOutputStream", Gzip},
	{"java.util.zip.InflaterInputStream", Gzip},
	{"org.apache.kafka.common.compress.GzipCompression", Gzip},
	{"org.apache.kafka.common.compress.GzipOutputStream", Gzip},
	{"java.util.zip.CRC32C", CRC32C},
	{"org.apache.kafka.common.utils.Crc32C", CRC32C},
	{"org.apache.kafka.common.utils.Checksums", CRC32C},
	{"java.util.zip.CRC32", CRC32},
	{"java.util.zip.Adler32", CRC32},
	{"org.apache.kafka.common.utils.Crc32", CRC32},
	{"sun.security.provider.MD5", MD5},
	{"sun.security.provider.SHA", SHA},
	{"sun.security.provider.SHA2", SHA},
	{"sun.security.provider.SHA5", SHA},
	{"sun.security.provider.SHA3", SHA},
	{"sun.security.provider.DigestBase", Digest},
	{"java.security.MessageDigest", Digest},
	{"com.sun.crypto.provider.GaloisCounterMode", AESGCM},
	{"com.sun.crypto.provider.GHASH", AESGCM},
	{"com.sun.crypto.provider.GCTR", AESGCM},
	{"com.sun.crypto.provider.CounterMode", AESGCM},
	{"com.sun.crypto.provider.AESCrypt", AESGCM},
	{"com.sun.crypto.provider.AESCipher", AESGCM},
	{"com.sun.crypto.provider", CryptoMisc},
	{"javax.crypto", CryptoMisc},
	{"sun.security.rsa", CryptoMisc},
	{"sun.security.ec", CryptoMisc},
	{"sun.security.util.math", CryptoMisc},
	{"sun.security.ssl", TLS},
	{"javax.net.ssl", TLS},
	{"org.apache.kafka.common.network.SslTransportLayer", TLS},
	{"org.apache.kafka.common.security.ssl", TLS},
	{"sun.nio.ch.SocketChannelImpl", Network},
	{"sun.nio.ch.SocketDispatcher", Network},
	{"sun.nio.ch.SocketAdaptor", Network},
	{"sun.nio.ch.ServerSocketChannelImpl", Network},
	{"sun.nio.ch.SelectorImpl", Network},
	{"sun.nio.ch.EPoll", Network},
	{"sun.nio.ch.EPollSelectorImpl", Network},
	{"sun.nio.ch.Net", Network},
	{"sun.nio.ch.FileChannelImpl.transferTo", Network}, // sendfile to a consumer's socket
	{"java.net", Network},
	{"org.apache.kafka.common.network", Network},
	{"kafka.network", Network},
	{"org.apache.kafka.network", Network},
	{"kafka.log", Log},
	{"org.apache.kafka.storage.internals", Log},
	{"org.apache.kafka.common.record", Log},
	{"sun.nio.ch.FileChannelImpl", Log},
	{"sun.nio.ch.FileDispatcherImpl", Log},
	{"kafka.server.ReplicaFetcherThread", Replicate},
	{"kafka.server.AbstractFetcherThread", Replicate},
	{"kafka.server.AbstractFetcherManager", Replicate},
	{"kafka.server.ReplicaFetcherManager", Replicate},
	{"kafka.server.ReplicaFetcherBlockingSend", Replicate},
	{"kafka.server.RemoteLeaderEndPoint", Replicate},
	{"kafka.server.ReplicaAlterLogDirsThread", Replicate},
	{"kafka.server.ReplicaManager.fetchMessages", Replicate},
	{"kafka.server.ReplicaManager.readFromLog", Replicate},
	{"kafka.server.ReplicaManager.readFromLocalLog", Replicate},
	{"kafka.server.DelayedFetch", Replicate},
	{"kafka.cluster.Partition.fetchRecords", Replicate},
	{"kafka.cluster.Partition.readRecords", Replicate},
	{"kafka.cluster.Partition.updateFollowerFetchState", Replicate},
	{"kafka.server.KafkaApis", Request},
	{"kafka.server.KafkaRequestHandler", Request},
	{"kafka.server.ReplicaManager", Request},
	{"kafka.server.DelayedProduce", Request},
	{"kafka.server.ControllerApis", Request},
	{"kafka.cluster.Partition", Request},
	{"kafka.coordinator", Request},
	{"org.apache.kafka.coordinator", Request},
	{"org.apache.kafka.server.purgatory", Request},
	{"org.apache.kafka.common.requests", Request},
	{"org.apache.kafka.common.message", Request},
	{"org.apache.kafka.common.protocol", Request},
}

// threadRules categorize by thread name what no frame decided, and the
// CPU of threads JFR did not sample: prefixes of JFR's thread names.
var threadRules = []rule{
	{"GC Thread", GC},
	{"G1 ", GC},
	{"ZGC", GC},
	{"ZWorker", GC},
	{"Shenandoah", GC},
	{"VM Thread", GC},
	{"C1 CompilerThread", JIT},
	{"C2 CompilerThread", JIT},
	{"JVMCI", JIT},
	{"data-plane-kafka-network-thread", Network},
	{"data-plane-kafka-socket-acceptor", Network},
	{"data-plane-kafka-request-handler", Request},
	{"ReplicaFetcherThread", Replicate},
	{"ReplicaAlterLogDirsThread", Replicate},
	{"kafka-log-cleaner-thread", Log},
}

// idleNatives are native methods in which a thread waits rather than
// runs: JFR samples threads in native code whether or not they are on a
// CPU, so samples whose innermost frame is one of these are not CPU.
var idleNatives = map[string]bool{
	"sun.nio.ch.EPoll.wait":                           true,
	"sun.nio.ch.EPollArrayWrapper.epollWait":          true,
	"sun.nio.ch.KQueue.poll":                          true,
	"sun.nio.ch.KQueueArrayWrapper.kevent0":           true,
	"sun.nio.ch.Net.poll":                             true,
	"sun.nio.ch.Net.accept":                           true,
	"sun.nio.ch.ServerSocketChannelImpl.accept0":      true,
	"java.net.PlainSocketImpl.socketAccept":           true,
	"java.net.SocketInputStream.socketRead0":          true,
	"java.lang.ProcessHandleImpl.waitForProcessExit0": true,
	"java.lang.ProcessImpl.waitForProcessExit":        true,
	"sun.nio.ch.FileDispatcherImpl.force0":            true, // fsync: waiting for the disk
	"java.nio.MappedMemoryUtils.force0":               true, // msync
	"java.lang.Thread.sleep":                          true,
	"java.lang.Object.wait":                           true,
}

// Idle reports whether a native sample with this innermost frame is a
// thread waiting (epoll_wait, poll, accept, fsync) rather than using CPU.
func Idle(top jfr.Frame) bool { return idleNatives[top.Class+"."+top.Method] }

// frameName is how rules see a frame: Class.method, or the bare symbol of
// a native frame without a class.
func frameName(f jfr.Frame) string {
	if f.Class == "" {
		return f.Method
	}
	return f.Class + "." + f.Method
}

// matchPrefix reports whether name starts with prefix at a boundary.
func matchPrefix(name, prefix string) bool {
	if !strings.HasPrefix(name, prefix) {
		return false
	}
	if len(name) == len(prefix) {
		return true
	}
	switch prefix[len(prefix)-1] {
	case '.', '$', '_', ':':
		return true
	}
	switch name[len(prefix)] {
	case '.', '$':
		return true
	}
	return false
}

// longest returns the category of the longest prefix in rs that name
// matches, "" for none.
func longest(rs []rule, name string) string {
	best, n := "", -1
	for _, r := range rs {
		if len(r.prefix) > n && matchPrefix(name, r.prefix) {
			best, n = r.category, len(r.prefix)
		}
	}
	return best
}

// FrameCategory is the category of one frame on its own, "" when no rule
// names it.
func FrameCategory(f jfr.Frame) string { return longest(rules, frameName(f)) }

// ThreadCategory is the category a thread's name gives, "" for none:
// the longest rule that starts the name (thread names end in numbers
// without a separator, so there is no boundary to check).
func ThreadCategory(name string) string {
	best, n := "", -1
	for _, r := range threadRules {
		if len(r.prefix) > n && strings.HasPrefix(name, r.prefix) {
			best, n = r.category, len(r.prefix)
		}
	}
	return best
}

// Categorize returns a sample's category and the index of the frame that
// decided it: the innermost frame a rule matches; else the thread name's
// category (index -1); else Other (-1).
func Categorize(frames []jfr.Frame, thread string) (string, int) {
	for i, f := range frames {
		if c := FrameCategory(f); c != "" {
			return c, i
		}
	}
	if c := ThreadCategory(thread); c != "" {
		return c, -1
	}
	return Other, -1
}
