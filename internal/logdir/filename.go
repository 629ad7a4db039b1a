package logdir

import "path/filepath"

// ParseFileName returns the kind, base offset and transition suffix
// (".deleted", ".cleaned", ".swap" or "") of a segment file's name, by the
// same rules as ParsePath but without requiring the file to be in a
// partition directory: for a segment copied elsewhere, or a test file. A
// name Kafka would not give a segment file is KindOther with offset -1.
func ParseFileName(path string) (kind Kind, baseOffset int64, suffix string) {
	return classifyFile(filepath.Base(path))
}
