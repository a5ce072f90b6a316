//go:build !k8s1_36 && !k8s1_37

// SchedulePod as Kubernetes 1.35 spells it (compat_136.go: from 1.36 on). The build of a release
// passes its tag (e2e/build.py: -tags=k8s1_36, k8s1_37); a plain `go build` is 1.35's.

package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func schedulePod(ctx context.Context, sched *scheduler.Scheduler, f framework.Framework, state fwk.CycleState, pod *v1.Pod) (scheduler.ScheduleResult, error) {
	return sched.SchedulePod(ctx, f, state, pod)
}
