# kscope: build helpers. scripts/test.sh is what CI runs.
#
# `make generate` rebuilds the eBPF objects (bpf/*.bpf.c ->
# internal/iotrace/*_bpfel.go and .o) with bpf2go; it needs clang-14,
# llvm-14 and libbpf-dev from Debian.
# The generated files are committed, so `make build` needs no clang.

GO ?= go

.PHONY: all build generate image

all: build

build:
	CGO_ENABLED=0 $(GO) build -o bin/kscope ./cmd/kscope

generate:
	$(GO) generate ./internal/iotrace

# The agent's container image (deploy/container/Containerfile): the static
# binary alone. IMAGE names it; podman, else docker.
IMAGE ?= kscope:dev
image:
	CGO_ENABLED=0 $(GO) build -trimpath -o deploy/container/kscope ./cmd/kscope
	$$(command -v podman || command -v docker) build -t $(IMAGE) -f deploy/container/Containerfile deploy/container
