// Package segment reads the files of a Kafka broker's log directories: the
// record batches of .log segment files, the entries of .index and
// .timeindex files, and the consistency of a partition's files with one
// another.
//
// It answers three questions. What is in a segment ([Open], [Reader])? What
// is at byte range [P, P+N) of a segment ([Lookup]): the batches a traced
// write put there and the message ids of their records, which is how a
// slow write on a broker is tied to the produce request it served. Is a
// partition's data intact ([Verify])?
//
// Batches are decoded by package records, the decoder kscope also uses on
// the wire. Files are read as streams with bounded memory, never loaded
// whole, and only regular files are opened (package safefile). Their bytes
// are untrusted: every error names the file and the byte position, nothing
// is allocated by a size read from the file, and damage does not end the
// reading: the [Reader] reports each damaged byte range ([Damage]: a bad
// length, a bad CRC, a truncated last batch) and resumes at the next
// valid batch. What a file is comes from its bytes as well as its name
// ([Identify]).
package segment
