package cluster

import (
	"fmt"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Codecs are the compression names Codec accepts, as Kafka's
// compression.type spells them.
func Codecs() []string { return []string{"none", "gzip", "snappy", "lz4", "zstd"} }

// Codec is franz-go's codec for a compression name ("" is none).
func Codec(name string) (kgo.CompressionCodec, error) {
	switch strings.ToLower(name) {
	case "", "none":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("compression %q: want none, gzip, snappy, lz4 or zstd", name)
}
