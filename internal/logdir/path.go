// Package logdir maps the files and directories of a Kafka broker's log
// directories to what they hold: the topic and partition of a partition
// directory, the kind and base offset of a segment file, and the topic id
// recorded in partition.metadata.
//
// It follows the naming rules of Kafka's LocalLog: a partition directory is
// named topic-partition, or topic-partition.uniqueId followed by -delete (a
// partition being deleted), -future (a replica being moved between log
// directories) or -stray (a partition the broker no longer hosts). Segment
// files are named by their base offset in 20 digits.
package logdir

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
)

// The suffixes of Kafka's special partition directory forms
// (LocalLog.DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix).
const (
	DeleteDirSuffix = "-delete"
	FutureDirSuffix = "-future"
	StrayDirSuffix  = "-stray"
)

// Kind is what a file in a partition directory holds.
type Kind int

const (
	// KindOther is any other file: partition.metadata,
	// leader-epoch-checkpoint, or a file Kafka does not write.
	KindOther Kind = iota
	// KindDir is the partition directory itself.
	KindDir
	KindLog       // NNN.log: record batches
	KindIndex     // NNN.index: offset index
	KindTimeIndex // NNN.timeindex: time index
	KindTxnIndex  // NNN.txnindex: aborted transaction index
	KindSnapshot  // NNN.snapshot: producer state snapshot
)

func (k Kind) String() string {
	switch k {
	case KindOther:
		return "other"
	case KindDir:
		return "dir"
	case KindLog:
		return "log"
	case KindIndex:
		return "index"
	case KindTimeIndex:
		return "timeindex"
	case KindTxnIndex:
		return "txnindex"
	case KindSnapshot:
		return "snapshot"
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// segmentKinds maps a file extension to its Kind.
var segmentKinds = map[string]Kind{
	".log":       KindLog,
	".index":     KindIndex,
	".timeindex": KindTimeIndex,
	".txnindex":  KindTxnIndex,
	".snapshot":  KindSnapshot,
}

// fileSuffixes are appended by Kafka to segment files in transition:
// deleted asynchronously, written by the log cleaner, or being swapped in.
var fileSuffixes = []string{".deleted", ".cleaned", ".swap"}

// offsetDigits is the width of the zero-padded offset in segment file names.
const offsetDigits = 20

// Location is what a path in a Kafka log directory names.
type Location struct {
	Topic     string
	Partition int32
	// Dir is the partition directory, and LogDir the log directory
	// holding it.
	Dir    string
	LogDir string
	// Suffix is DeleteDirSuffix, FutureDirSuffix or StrayDirSuffix for
	// the special directory forms, and UniqueID the id Kafka put before
	// it; both are empty for a plain topic-partition directory.
	Suffix   string
	UniqueID string
	// TopicMaybeTruncated is set for -delete and -stray directories whose
	// name is 255 bytes long: Kafka shortens the topic in those names to
	// keep them within 255 bytes, so Topic may be a prefix of the real
	// name.
	TopicMaybeTruncated bool

	Kind Kind
	// BaseOffset is the offset in a segment file's name (log, index,
	// timeindex, txnindex, snapshot), -1 otherwise.
	BaseOffset int64
	// FileSuffix is ".deleted", ".cleaned" or ".swap" when Kafka appended
	// one to a segment file's name, otherwise empty.
	FileSuffix string
}

// maxDirName is the longest file name Kafka creates; it truncates topics in
// -delete and -stray directory names to stay within it.
const maxDirName = 255

// ParsePath returns what path names: a partition directory, or a file in
// one. It looks only at the path, not at the file system, so a path whose
// last element is a valid partition directory name is taken to be the
// directory.
func ParsePath(path string) (Location, error) {
	path = filepath.Clean(path)
	if loc, err := parseDirName(filepath.Base(path)); err == nil {
		loc.Dir, loc.LogDir = path, filepath.Dir(path)
		loc.Kind, loc.BaseOffset = KindDir, -1
		return loc, nil
	}
	dir := filepath.Dir(path)
	loc, err := parseDirName(filepath.Base(dir))
	if err != nil {
		return Location{}, fmt.Errorf("logdir: %q is neither a partition directory nor in one: %w", path, err)
	}
	loc.Dir, loc.LogDir = dir, filepath.Dir(dir)
	loc.Kind, loc.BaseOffset, loc.FileSuffix = classifyFile(filepath.Base(path))
	return loc, nil
}

// parseDirName parses a partition directory name the way Kafka's
// LocalLog.parseTopicPartitionName does: a special form must match
// ^(\S+)-(\S+)\.(\S+)<suffix>$ and loses everything from its last '.';
// then the topic and partition are split at the last '-', since topics may
// contain '-' and '.'.
func parseDirName(name string) (Location, error) {
	var loc Location
	bad := func(why string) error {
		return fmt.Errorf("%q is not topic-partition or topic-partition.uniqueId%s/%s/%s: %s",
			name, DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix, why)
	}
	if strings.ContainsFunc(name, isSpace) {
		return loc, bad("contains white space")
	}
	tp := name
	for _, s := range []string{DeleteDirSuffix, FutureDirSuffix, StrayDirSuffix} {
		rest, ok := strings.CutSuffix(name, s)
		if !ok {
			continue
		}
		dot := strings.LastIndexByte(rest, '.')
		if dot < 0 || dot == len(rest)-1 {
			return loc, bad("no unique id before " + s)
		}
		tp, loc.Suffix, loc.UniqueID = rest[:dot], s, rest[dot+1:]
		loc.TopicMaybeTruncated = s != FutureDirSuffix && len(name) >= maxDirName
		break
	}
	dash := strings.LastIndexByte(tp, '-')
	if dash < 0 {
		return loc, bad("no '-' before the partition")
	}
	topic, part := tp[:dash], tp[dash+1:]
	if err := checkTopic(topic); err != nil {
		return loc, bad(err.Error())
	}
	p, err := parsePartition(part)
	if err != nil {
		return loc, bad(err.Error())
	}
	loc.Topic, loc.Partition = topic, p
	return loc, nil
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
}

// checkTopic applies Kafka's rules for topic names (Topic.validate): one to
// 249 characters from [a-zA-Z0-9._-], and not "." or "..".
func checkTopic(topic string) error {
	switch {
	case topic == "":
		return fmt.Errorf("empty topic")
	case topic == "." || topic == "..":
		return fmt.Errorf("topic %q is not allowed", topic)
	case len(topic) > 249:
		return fmt.Errorf("topic is %d characters long, more than 249", len(topic))
	}
	for _, c := range []byte(topic) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic has the illegal character %q", c)
		}
	}
	return nil
}

// parsePartition parses a partition number: decimal digits only (Kafka
// never writes a sign), within int32.
func parsePartition(s string) (int32, error) {
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, fmt.Errorf("partition %q is not a number", s)
	}
	p, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("partition %q is out of range", s)
	}
	return int32(p), nil
}

// classifyFile returns the kind, base offset and transition suffix of a
// file name in a partition directory.
func classifyFile(name string) (Kind, int64, string) {
	var suffix string
	for _, s := range fileSuffixes {
		if rest, ok := strings.CutSuffix(name, s); ok {
			name, suffix = rest, s
			break
		}
	}
	digits, ext, ok := strings.Cut(name, ".")
	kind, known := segmentKinds["."+ext]
	if !ok || !known || len(digits) != offsetDigits || strings.TrimLeft(digits, "0123456789") != "" {
		return KindOther, -1, ""
	}
	off, err := strconv.ParseInt(digits, 10, 64)
	if err != nil {
		return KindOther, -1, ""
	}
	return kind, off, suffix
}
