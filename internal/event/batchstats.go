package event

// BatchStats describes a produce partition's record batches by size, for
// the capacity model (kscope model --from-capture). The wire decoder fills
// it only when asked to (wire.Config.BatchStats), since it decompresses
// every batch; other commands' output never has it.
type BatchStats struct {
	Batches int  `json:"batches"`
	Magic   int8 `json:"magic"`
	// Compressed counts the batches with a codec.
	Compressed int `json:"compressed,omitempty"`
	// RecordsBytes is the records part of the batches as sent (after a
	// magic 2 batch's 61-byte header; a magic 0/1 wrapper's value),
	// UncompressedBytes the same decompressed.
	RecordsBytes      int   `json:"records_bytes"`
	UncompressedBytes int   `json:"uncompressed_bytes"`
	KeyBytes          int64 `json:"key_bytes"`
	NullKeys          int   `json:"null_keys,omitempty"`
	ValueBytes        int64 `json:"value_bytes"`
	Headers           int   `json:"headers,omitempty"`
	HeaderBytes       int64 `json:"header_bytes,omitempty"`
	// TimestampSpanMs sums each magic 2 batch's max minus first timestamp.
	TimestampSpanMs int64 `json:"timestamp_span_ms,omitempty"`
}
