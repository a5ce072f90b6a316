//go:build !k8s1_36 && !k8s1_37

// What the oracle wraps, as Kubernetes 1.35 spells it (compat_136.go: from 1.36 on). The build of a
// release passes its tag (e2e/build.py: -tags=k8s1_36, k8s1_37); a plain `go build` is 1.35's.

package main

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func fakeRecorders(string) events.EventRecorder { return &events.FakeRecorder{} }

func (o *observed) GetNodeHint(ctx context.Context, pod *v1.Pod, state fwk.CycleState, cycleCount int64) (string, fwk.PodSignature) {
	hint, signature := o.Framework.GetNodeHint(ctx, pod, state, cycleCount)
	o.w.noteHint(hint, time.Now())
	return hint, signature
}

func (w *world) wrapSchedulePod() {
	schedulePod := w.sched.SchedulePod
	w.sched.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, pod *v1.Pod) (scheduler.ScheduleResult, error) {
		res, err := schedulePod(ctx, f, state, pod)
		w.scheduled(ctx, pod, res, err)
		return res, err
	}
}
