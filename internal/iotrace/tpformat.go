package iotrace

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tracefsEvents is where tracefs lists tracepoints (ensureTracefs mounts it).
const tracefsEvents = "/sys/kernel/tracing/events"

// tpField is one field of a tracepoint record as bpf/iojournal.bpf.c
// declares it: its name, byte offset and size.
type tpField struct {
	name         string
	offset, size int
}

// parseFormat reads the fields of a tracepoint's format file, e.g.
// "field:dev_t dev;	offset:8;	size:4;	signed:0;".
func parseFormat(path string) (map[string]tpField, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fields := map[string]tpField{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "field:") {
			continue
		}
		var fd tpField
		for part := range strings.SplitSeq(line, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(part), ":")
			if !ok {
				continue
			}
			switch k {
			case "field":
				// "char rwbs[10]", "__data_loc char[] cmd": the name is the
				// last word, without its array bounds.
				words := strings.Fields(v)
				if len(words) == 0 {
					continue
				}
				fd.name, _, _ = strings.Cut(words[len(words)-1], "[")
			case "offset":
				fd.offset, _ = strconv.Atoi(v)
			case "size":
				fd.size, _ = strconv.Atoi(v)
			}
		}
		if fd.name != "" {
			fields[fd.name] = fd
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return fields, nil
}

// checkFormat compares the running kernel's record layout of
// group:name with the one the BPF program was compiled for. A tracepoint
// that does not exist returns an error wrapping os.ErrNotExist (its file
// system's module is not loaded).
func checkFormat(events, group, name string, want []tpField) error {
	have, err := parseFormat(filepath.Join(events, group, name, "format"))
	if err != nil {
		return fmt.Errorf("tracepoint %s:%s: %w", group, name, err)
	}
	for _, w := range want {
		h, ok := have[w.name]
		if !ok {
			return fmt.Errorf("tracepoint %s:%s has no field %s", group, name, w.name)
		}
		if h.offset != w.offset || h.size < w.size {
			return fmt.Errorf("tracepoint %s:%s: field %s at offset %d size %d, built for offset %d size %d",
				group, name, w.name, h.offset, h.size, w.offset, w.size)
		}
	}
	return nil
}
