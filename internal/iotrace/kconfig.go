package iotrace

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kernelHZ returns the kernel's tick rate, CONFIG_HZ, from
// /boot/config-RELEASE or /proc/config.gz: jbd2_run_stats counts its
// phases in jiffies.
func kernelHZ() (int, error) {
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return 0, fmt.Errorf("uname: %w", err)
	}
	release := unix.ByteSliceToString(uts.Release[:])
	if f, err := os.Open("/boot/config-" + release); err == nil {
		defer f.Close()
		return hzFrom(f)
	}
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return 0, fmt.Errorf("no kernel config (/boot/config-%s, /proc/config.gz): %w", release, err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("/proc/config.gz: %w", err)
	}
	return hzFrom(zr)
}

// hzFrom finds CONFIG_HZ=N in a kernel config.
func hzFrom(r io.Reader) (int, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "CONFIG_HZ="); ok {
			hz, err := strconv.Atoi(v)
			if err != nil || hz <= 0 {
				return 0, fmt.Errorf("bad CONFIG_HZ=%q", v)
			}
			return hz, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New("no CONFIG_HZ in the kernel config")
}
