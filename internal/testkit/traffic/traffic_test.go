package traffic

import (
	"context"
	"testing"
)

func TestCodecs(t *testing.T) {
	for _, c := range Codecs() {
		if _, err := franzCodec(c); err != nil {
			t.Errorf("franzCodec(%q): %v", c, err)
		}
	}
	if _, err := franzCodec("brotli"); err == nil {
		t.Error("franzCodec(brotli): no error")
	}
	// Rejected before any JVM starts.
	if err := JavaProducerPerf(context.Background(), "/nonexistent", "127.0.0.1:1", "t", 1, 10, "brotli"); err == nil {
		t.Error("JavaProducerPerf(brotli): no error")
	}
}
