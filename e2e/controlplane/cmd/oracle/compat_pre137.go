//go:build !k8s1_37

// What the oracle wraps, as Kubernetes 1.35 and 1.36 spell it (compat_137.go: 1.37).

package main

import (
	"context"

	v1 "k8s.io/api/core/v1"
	policy "k8s.io/api/policy/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
)

func (w *world) wrapPop() {
	next := w.sched.NextPod
	w.sched.NextPod = func(logger klog.Logger) (*framework.QueuedPodInfo, error) {
		info, err := next(logger)
		w.popped(info)
		return info, err
	}
}

// selectVictims is SelectVictimsOnNode on a copy of the node.
func selectVictims(ctx context.Context, pl *defaultpreemption.DefaultPreemption, state fwk.CycleState, pod *v1.Pod,
	info fwk.NodeInfo, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	return pl.SelectVictimsOnNode(ctx, state, pod, info.Snapshot(), pdbs)
}
