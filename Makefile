# kscope: build helpers. scripts/test.sh is what CI runs.
#
# `make generate` rebuilds the eBPF objects (bpf/*.bpf.c ->
# internal/iotrace/*_bpfel.go and .o) with bpf2go; it needs clang-14,
# llvm-14 and libbpf-dev from Debian.
# The generated files are committed, so `make build` needs no clang.

GO ?= go

.PHONY: all build generate

all: build

build:
	CGO_ENABLED=0 $(GO) build -o bin/kscope ./cmd/kscope

generate:
	$(GO) generate ./internal/iotrace
