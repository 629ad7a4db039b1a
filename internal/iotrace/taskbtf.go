package iotrace

import (
	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
)

// haveTaskBTF reports whether tracepoint programs may call
// bpf_get_current_task_btf (Linux 5.11): bpf/iotrace.bpf.c then walks to
// the fd table with plain loads rather than bpf_probe_read_kernel calls.
// cilium/ebpf caches the probe's answer.
func haveTaskBTF() bool {
	return features.HaveProgramHelper(ebpf.TracePoint, asm.FnGetCurrentTaskBtf) == nil
}

// boolByte is a BPF program's const volatile __u8 flag.
func boolByte(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}
