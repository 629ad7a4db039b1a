// Command syscallcost-vm measures, on a kernel that allows BPF trampolines
// (Debian's cloud kernel under qemu, internal/testkit/vm), what iotrace's
// timing of the write system calls costs every system call with its
// programs at the syscalls tracepoints and at fentry on the system call
// functions: this project's hosts refuse fentry, so bench/syscall-cost.sh
// can only measure the tracepoints. It boots ./guest as the VM's /init and
// prints a Markdown table of ns per call over no tracing, median and range
// over the rounds (each variant paired with `none` of its round).
//
// Usage (root): go run ./bench/syscallcost-vm [-rounds N] [-calls N]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kscope-dev/kscope/internal/testkit/vm"
)

func main() {
	rounds := flag.Int("rounds", 5, "rounds, each every variant and kind")
	calls := flag.Int("calls", 200000, "system calls per measurement")
	flag.Parse()
	if err := run(*rounds, *calls); err != nil {
		fmt.Fprintln(os.Stderr, "syscallcost-vm:", err)
		os.Exit(1)
	}
}

func run(rounds, calls int) error {
	ctx := context.Background()
	kdir, err := vm.EnsureKernel(ctx)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "syscallcost-vm")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	init := filepath.Join(dir, "init")
	if err := vm.BuildInit(ctx, "./bench/syscallcost-vm/guest", init); err != nil {
		return err
	}
	res, err := vm.Run(ctx, vm.Config{KernelDir: kdir, Init: init, Timeout: 60 * time.Minute,
		Args: []string{strconv.Itoa(rounds), strconv.Itoa(calls)}})
	if err != nil {
		return fmt.Errorf("%w\n%s", err, res.Output)
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("guest exit code %d\n%s", res.ExitCode, res.Output)
	}
	fmt.Printf("kernel %s, accel %s, %d rounds of %d calls per measurement, VM ran %v\n\n",
		filepath.Base(kdir), res.Accel, rounds, calls, res.Elapsed.Round(time.Second))
	if err := report(res.Output); err != nil {
		return fmt.Errorf("%w\nconsole:\n%s", err, res.Output)
	}
	return nil
}

// report prints, per variant and kind, the CPU ns per call over `none` in
// the same round: median [min, max]; and none's own ns per call.
func report(console string) error {
	type key struct {
		round         int
		variant, kind string
	}
	ns := map[key]float64{}
	rounds := 0
	for _, line := range strings.Split(console, "\n") {
		// A line may follow the firmware's output without a newline
		// ("Booting from ROM..result 1 none reads 1176.8").
		i := strings.Index(line, "result ")
		if i < 0 {
			continue
		}
		f := strings.Fields(line[i:])
		if len(f) != 5 {
			return fmt.Errorf("bad line %q", line)
		}
		r, err1 := strconv.Atoi(f[1])
		v, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("bad line %q", line)
		}
		ns[key{r, f[2], f[3]}] = v
		rounds = max(rounds, r)
	}
	kinds := []string{"reads", "writes", "t_reads", "t_writes"}
	fmt.Println("| variant | " + strings.Join(kinds, " | ") + " |")
	fmt.Println("| --- |" + strings.Repeat(" ---: |", len(kinds)))
	for _, variant := range []string{"none", "tracepoints", "fentry"} {
		row := []string{variant}
		for _, kind := range kinds {
			var xs []float64
			for r := 1; r <= rounds; r++ {
				v, ok := ns[key{r, variant, kind}]
				base, okb := ns[key{r, "none", kind}]
				if !ok || !okb {
					return fmt.Errorf("round %d: no %s %s", r, variant, kind)
				}
				if variant != "none" {
					v -= base
				}
				xs = append(xs, v)
			}
			slices.Sort(xs)
			format := "%+.0f [%+.0f, %+.0f]"
			if variant == "none" {
				format = "%.0f [%.0f, %.0f]"
			}
			row = append(row, fmt.Sprintf(format, xs[len(xs)/2], xs[0], xs[len(xs)-1]))
		}
		fmt.Println("| " + strings.Join(row, " | ") + " |")
	}
	return nil
}
