// Command genrecording writes a synthetic kscope recording for
// bench/explain.sh: genrecording DIR [REQUESTS].
package main

import (
	"fmt"
	"os"
	"strconv"

	"github.com/kscope-dev/kscope/internal/testkit/explaintest"
)

func main() {
	if len(os.Args) < 2 || len(os.Args) > 3 {
		fmt.Fprintln(os.Stderr, "usage: genrecording DIR [REQUESTS]")
		os.Exit(2)
	}
	n := 1_000_000
	if len(os.Args) == 3 {
		v, err := strconv.Atoi(os.Args[2])
		if err != nil || v <= 0 {
			fmt.Fprintf(os.Stderr, "genrecording: %q is not a positive count\n", os.Args[2])
			os.Exit(2)
		}
		n = v
	}
	if err := explaintest.GenerateRecording(os.Args[1], n); err != nil {
		fmt.Fprintf(os.Stderr, "genrecording: %v\n", err)
		os.Exit(1)
	}
}
