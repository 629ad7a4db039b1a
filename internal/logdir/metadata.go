package logdir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/kscope-dev/kscope/internal/event"
	"github.com/kscope-dev/kscope/internal/safefile"
)

// MetadataFile is the file in a partition directory that records the
// topic id (Kafka 2.8 and later).
const MetadataFile = "partition.metadata"

// maxMetadataSize bounds the read of partition.metadata, which holds two
// short lines; a larger file is not one Kafka wrote.
const maxMetadataSize = 4 << 10

// ReadPartitionMetadata returns the topic id recorded in dir's
// partition.metadata. The file reads
//
//	version: 0
//	topic_id: <22 characters of URL-safe base64>
//
// and, like Kafka's PartitionMetadataReadBuffer, each line is split at ':'
// followed by white space; only version 0 exists, and the all-zero id is
// invalid. A missing file gives an error wrapping fs.ErrNotExist.
func ReadPartitionMetadata(dir string) ([16]byte, error) {
	var id [16]byte
	path := filepath.Join(dir, MetadataFile)
	text, err := readSmallFile(path)
	if err != nil {
		return id, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("logdir: %s: %s", path, fmt.Sprintf(format, args...))
	}
	lines := strings.Split(strings.TrimRight(text, "\r\n"), "\n")
	if len(lines) != 2 {
		return id, bad("%d lines, want 2", len(lines))
	}
	version, err := field(lines[0], "version")
	if err != nil {
		return id, bad("%v", err)
	}
	if v, err := strconv.Atoi(version); err != nil || v != 0 {
		return id, bad("unsupported version %q", version)
	}
	topicID, err := field(lines[1], "topic_id")
	if err != nil {
		return id, bad("%v", err)
	}
	id, ok := event.ParseTopicID(topicID)
	if !ok {
		return id, bad("topic id %q is not 16 bytes of URL-safe base64", topicID)
	}
	if id == ([16]byte{}) {
		return id, bad("topic id is all zeros")
	}
	return id, nil
}

// field returns the value of a "key: value" line.
func field(line, key string) (string, error) {
	line = strings.TrimSuffix(line, "\r")
	k, v, ok := strings.Cut(line, ":")
	if !ok || k != key || v == "" || !isSpace(rune(v[0])) {
		return "", fmt.Errorf("line %q is not %q followed by ': value'", line, key)
	}
	v = strings.TrimLeftFunc(v, isSpace)
	if v == "" || strings.ContainsFunc(v, isSpace) {
		return "", fmt.Errorf("line %q has no single value", line)
	}
	return v, nil
}

// readSmallFile reads a regular file of at most maxMetadataSize bytes.
// safefile checks the type before the open and again on the open file,
// so a FIFO or device under the name (or swapped in) cannot block or
// stream forever.
func readSmallFile(path string) (string, error) {
	in, err := safefile.Open(path, safefile.Regular)
	if err != nil {
		return "", fmt.Errorf("logdir: %w", err)
	}
	defer in.Close()
	b, err := io.ReadAll(io.LimitReader(in, maxMetadataSize+1))
	if err != nil {
		return "", fmt.Errorf("logdir: reading %s: %w", path, err)
	}
	if len(b) > maxMetadataSize {
		return "", fmt.Errorf("logdir: %s is larger than %d bytes", path, maxMetadataSize)
	}
	return string(b), nil
}

// TopicIDs scans the partition directories of the given log directories
// and maps each topic id found in a partition.metadata to its topic name.
// Partition directories without the file (Kafka before 2.8) are skipped.
//
// Plain and -future directories name topics first; -delete and -stray
// directories, which hold deleted or abandoned partitions, only add ids not
// otherwise known, and not when Kafka may have truncated the topic in the
// directory name.
//
// Problems with single directories (an unreadable or malformed
// partition.metadata, an id recorded for two topics) are joined into the
// error, and the map holds everything else; a log directory that cannot be
// listed is an error too.
func TopicIDs(logDirs ...string) (map[[16]byte]string, error) {
	ids := make(map[[16]byte]string)
	var errs []error
	var leftovers []Location // -delete and -stray directories, for a second pass
	add := func(loc Location) {
		id, err := ReadPartitionMetadata(loc.Dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return
		case err != nil:
			errs = append(errs, err)
			return
		}
		if prev, ok := ids[id]; ok && prev != loc.Topic {
			if loc.Suffix == "" || loc.Suffix == FutureDirSuffix {
				errs = append(errs, fmt.Errorf("logdir: topic id %s is recorded for both %q and %q (in %s)",
					event.TopicIDString(id), prev, loc.Topic, loc.Dir))
			}
			return
		}
		ids[id] = loc.Topic
	}
	for _, logDir := range logDirs {
		entries, err := os.ReadDir(logDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("logdir: %w", err))
			continue
		}
		for _, e := range entries {
			if !e.IsDir() && e.Type()&fs.ModeSymlink == 0 {
				continue
			}
			loc, err := ParsePath(filepath.Join(logDir, e.Name()))
			if err != nil || loc.Kind != KindDir {
				continue // checkpoint files, meta.properties, other directories
			}
			switch loc.Suffix {
			case "", FutureDirSuffix:
				add(loc)
			default:
				if !loc.TopicMaybeTruncated {
					leftovers = append(leftovers, loc)
				}
			}
		}
	}
	for _, loc := range leftovers {
		add(loc)
	}
	return ids, errors.Join(errs...)
}
