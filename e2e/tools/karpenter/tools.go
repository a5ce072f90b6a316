//go:build tools

// Package tools pins Karpenter's kwok provider in this module so `go build sigs.k8s.io/karpenter/kwok`
// resolves from go.sum (e2e/test_karpenter.py and e2e/karpenter_contrast.py run it against the e2e
// control plane; e2e/build.py ensure_karpenter builds it). Its own module: it must never move the
// control plane's v1.35.4 build.
package tools

import (
	_ "sigs.k8s.io/karpenter/kwok"
)
