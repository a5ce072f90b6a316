//go:build tools

// Package tools pins the descheduler in this module so `go build sigs.k8s.io/descheduler/cmd/descheduler`
// resolves from go.sum (bench/rebalance_compare.py runs it against spread-scheduler's rebalancing).
package tools

import (
	_ "sigs.k8s.io/descheduler/cmd/descheduler"
)
