// Package vm boots a real Linux kernel under qemu with a static Go program
// of ours as its /init, for tests of kernel features this host lacks (BPF
// fentry/fexit programs need ftrace, which the host kernel has not got).
//
// The kernel is Debian bookworm's cloud kernel (linux-image-cloud-amd64,
// 6.1.x, with FTRACE, BTF and BPF trampolines), fetched and unpacked by
// scripts/vm-kernel.sh (EnsureKernel runs it). Run builds an initramfs
// (newc cpio) holding the program as /init, the kernel modules the boot
// needs (those the virtio disks and their file systems need when the
// kernel's config has them as modules, plus Config.Modules, each with its
// dependencies from modules.dep) and a manifest (guest.Manifest); makes the
// file systems of Config.Disks on sparse image files on the host; and boots
// qemu-system-x86_64 (KVM when /dev/kvm works, else TCG) with the console on
// ttyS0, which it captures.
//
// In the guest the program calls guest.Setup, which mounts proc, sysfs,
// devtmpfs, tmpfs, debugfs, tracefs and bpffs, loads the modules and mounts
// the disks; and ends with guest.Exit(code), which prints a marker line with
// a per-boot token and the code on the console and powers off. Run returns
// that code; a VM that ends without the marker is an error carrying the
// console's tail. docs/vmtest.md has the details.
package vm
