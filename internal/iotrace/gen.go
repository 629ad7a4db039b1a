package iotrace

// The BPF side lives in bpf/iotrace.bpf.c (system calls),
// bpf/iofunc.bpf.c (file system functions, where fentry is allowed),
// bpf/iosysfn.bpf.c (the system calls at fentry, where it is allowed),
// bpf/iojournal.bpf.c (journal, XFS log and block layer),
// bpf/iowait.bpf.c (kernel waits), bpf/iosteal.bpf.c (CPU steal),
// bpf/iorunq.bpf.c (run-queue delays), bpf/iosock.bpf.c (which thread
// serves each connection) and bpf/iopcache.bpf.c (pages added to the page
// cache). The generated *_bpfel.go and *_bpfel.o are
// committed so that `go build` needs no clang; `make generate` (clang-14,
// llvm-14 and libbpf-dev from Debian) rebuilds them.

//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iotrace_event -type iotrace_hist_key -type iotrace_hist iotrace ../../bpf/iotrace.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iojournal_event -type iojournal_hist_key -type iojournal_hist iojournal ../../bpf/iojournal.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iowait_event iowait ../../bpf/iowait.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel iofunc ../../bpf/iofunc.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel iosysfn ../../bpf/iosysfn.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iosteal_event iosteal ../../bpf/iosteal.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iorunq_event iorunq ../../bpf/iorunq.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iosock_event iosock ../../bpf/iosock.bpf.c -- -I../../bpf
//go:generate go run github.com/cilium/ebpf/cmd/bpf2go -cc clang-14 -cflags "-O2 -g -Wall -Werror -I/usr/include/x86_64-linux-gnu" -target bpfel -type iopcache_event iopcache ../../bpf/iopcache.bpf.c -- -I../../bpf
