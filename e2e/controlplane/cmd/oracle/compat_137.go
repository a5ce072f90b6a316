//go:build k8s1_37

// What the oracle wraps, as Kubernetes 1.37 spells it: the queue pops entities (a pod or a pod
// group), and SelectVictimsOnNode takes the victims GetVictimsOnNode found, as DryRunPreemption does.

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
	next := w.sched.NextEntity
	w.sched.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		entity, err := next(logger)
		if info, ok := entity.(*framework.QueuedPodInfo); ok {
			w.popped(info)
		}
		return entity, err
	}
}

// selectVictims is SelectVictimsOnNode on a copy of the node, with the victims DryRunPreemption
// would hand it.
func selectVictims(ctx context.Context, pl *defaultpreemption.DefaultPreemption, state fwk.CycleState, pod *v1.Pod,
	info fwk.NodeInfo, pdbs []*policy.PodDisruptionBudget) ([]*v1.Pod, int, *fwk.Status) {
	all, err := pl.Evaluator.GetVictimsOnNode(ctx, info)
	if err != nil {
		return nil, 0, fwk.AsStatus(err)
	}
	return pl.SelectVictimsOnNode(ctx, state, pod, info.Snapshot(), all, pdbs)
}
