package records

// eachRecordV2 calls fn with each record of the magic 2 batch h until fn
// returns false, decompressing the records first if the batch is
// compressed.
func (d *Decoder) eachRecordV2(h *Batch, fn func(*rawRecord) bool) error {
	data := h.Data[v2HeaderLen:]
	if h.Codec != CodecNone {
		var err error
		if data, err = d.unz.decompress(h.Codec, data, d.maxDecompressedSize()); err != nil {
			return &Error{Pos: h.Position, Err: err}
		}
		// parseV2Header checked this for uncompressed batches.
		if h.NumRecords > len(data)/minRecordV2 {
			return errorf(h.Position, "record count %d exceeds what %d decompressed bytes can hold", h.NumRecords, len(data))
		}
	}
	for i := range h.NumRecords {
		n, err := parseRecordV2(data, &d.raw)
		if err != nil {
			return errorf(h.Position, "record %d of %d: %w", i, h.NumRecords, err)
		}
		data = data[n:]
		if !fn(&d.raw) {
			return nil
		}
	}
	if len(data) != 0 {
		return errorf(h.Position, "%d bytes follow the batch's %d records", len(data), h.NumRecords)
	}
	return nil
}
