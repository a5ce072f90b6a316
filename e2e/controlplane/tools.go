//go:build tools

// Package tools keeps upstream's mains in the module graph, so `go mod tidy` keeps every package
// `go build k8s.io/kubernetes/cmd/...` needs and go.sum stays complete for -mod=readonly builds.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
