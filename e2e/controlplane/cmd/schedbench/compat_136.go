//go:build k8s1_36 || k8s1_37

// SchedulePod as Kubernetes 1.36 and later spell it: on the QueuedPodInfo, whose signature the queue
// computes when the pod is added (here, with the cycle: the same work, counted in the pod's time);
// and the snapshot brought up to date first, as schedulingCycle now does before SchedulePod (the
// profile's shared lister is the scheduler's snapshot).

package main

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func schedulePod(ctx context.Context, sched *scheduler.Scheduler, f framework.Framework, state fwk.CycleState, pod *v1.Pod) (scheduler.ScheduleResult, error) {
	snapshot, ok := f.SnapshotSharedLister().(*internalcache.Snapshot)
	if !ok {
		return scheduler.ScheduleResult{}, fmt.Errorf("the profile's lister is a %T, not the scheduler's snapshot", f.SnapshotSharedLister())
	}
	if err := sched.Cache.UpdateSnapshot(klog.FromContext(ctx), snapshot); err != nil {
		return scheduler.ScheduleResult{}, err
	}
	info, err := framework.NewPodInfo(pod)
	if err != nil {
		return scheduler.ScheduleResult{}, err
	}
	queued := &framework.QueuedPodInfo{PodInfo: info, PodSignature: f.SignPod(ctx, pod)}
	return sched.SchedulePod(ctx, f, state, queued)
}
