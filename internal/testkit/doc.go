// Package testkit holds, in its subpackages, what only tests use: real
// brokers and captures for tests and the one skip policy (labtest), a
// Debian kernel under qemu for tests of BPF features this host lacks
// (vm), the broker's request-log parser (requestlog), client traffic
// (traffic), real clients of several kinds and ages with known
// configurations (clientzoo), and fixtures for compare and explain (comparetest,
// explaintest). The kscope binary never imports any of them:
// TestProductImportsNoTestkit checks it.
package testkit
