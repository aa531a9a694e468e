// Package swift holds the options of the generated Swift client (openapi-generator.yaml) and
// guide_test.go (build tag clients, run by scripts/clients.sh): docs/CLIENTS.md's iOS class
// checked against the generated client, as far as a machine without a Swift toolchain can.
package swift
