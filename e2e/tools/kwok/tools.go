//go:build tools

// Package tools pins kwok's controller (and kwokctl, tried as a runtime) in this module so
// `go build sigs.k8s.io/kwok/cmd/kwok` resolves from go.sum.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
