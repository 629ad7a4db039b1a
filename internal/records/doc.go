// Package records decodes Kafka record batches: the bytes of a produce
// request partition's Records field, of a fetch response partition's
// RecordBatches, and of a log segment (.log) file.
//
// It is the one batch decoder in kscope: the wire decoder uses it to count
// records and extract message ids from produce and fetch traffic, and the
// segment reader uses it to walk .log files. It understands magic 2 record
// batches and the legacy magic 0 and 1 message sets, including compressed
// wrapper messages.
//
// The input is untrusted. Every length read from it is checked against the
// bytes actually present before it is used, nothing is allocated by a size
// taken from the input, and decoding never panics. Errors carry the position
// of the batch in the input (see [Error]). A batch cut short by the end of
// the input is reported with an error wrapping [ErrTruncated]: that is normal
// at the end of a fetch response, which brokers may end with a partial batch,
// and at the end of a segment written by a broker that crashed.
//
// Decoding happens in two levels. Scanning batches ([Decoder.Batches],
// [Reader]) reads only batch headers and never decompresses: a magic 2
// batch's header holds its record count. Records ([Decoder.Records]) are
// decoded, and decompressed, only when asked for.
package records
