// Command gencapture writes the hostile captures whose cost bench and
// docs/hostile-captures.md measure:
//
//	gencapture partial OUT.pcap [CONNS [FRAME_BYTES]]  (default 2000 connections, 120000 bytes)
//	gencapture secrets OUT.pcapng [BLOCKS [LINES]]     (default 100000 secrets blocks of 1 key log line)
package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"

	"github.com/kscope-dev/kscope/internal/capture/capturetest"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "gencapture: %v\n", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: gencapture partial|secrets OUT [N [BYTES]]")
	}
	nums, err := counts(args[2:])
	if err != nil {
		return err
	}
	f, err := os.OpenFile(args[1], os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	switch args[0] {
	case "partial":
		err = capturetest.PartialFrames(w, count(nums, 0, 2000), count(nums, 1, 120000))
	case "secrets":
		err = capturetest.SecretsBlocks(w, count(nums, 0, 100000), count(nums, 1, 1))
	default:
		err = fmt.Errorf("unknown capture %q: want partial or secrets", args[0])
	}
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func counts(args []string) ([]int, error) {
	var out []int
	for _, a := range args {
		n, err := strconv.Atoi(a)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", a)
		}
		out = append(out, n)
	}
	return out, nil
}

func count(nums []int, i, def int) int {
	if i < len(nums) {
		return nums[i]
	}
	return def
}
