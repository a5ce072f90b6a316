//go:build k8s1_36 || k8s1_37

// What the oracle wraps, as Kubernetes 1.36 and later spell it: recorders with a logger, the pod's
// signature handed to GetNodeHint, SchedulePod on the QueuedPodInfo.

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

func fakeRecorders(string) events.EventRecorderLogger { return &events.FakeRecorder{} }

func (o *observed) GetNodeHint(ctx context.Context, pod *v1.Pod, signature fwk.PodSignature, state fwk.CycleState, cycleCount int64) string {
	hint := o.Framework.GetNodeHint(ctx, pod, signature, state, cycleCount)
	o.w.noteHint(hint, time.Now())
	return hint
}

func (w *world) wrapSchedulePod() {
	schedulePod := w.sched.SchedulePod
	w.sched.SchedulePod = func(ctx context.Context, f framework.Framework, state fwk.CycleState, podInfo *framework.QueuedPodInfo) (scheduler.ScheduleResult, error) {
		res, err := schedulePod(ctx, f, state, podInfo)
		w.scheduled(ctx, podInfo.Pod, res, err)
		return res, err
	}
}
