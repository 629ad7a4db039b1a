// Command kscope finds out why a Kafka cluster is slow, and proves the fix.
package main

import (
	"os"

	"github.com/kscope-dev/kscope/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdout, os.Stderr))
}
