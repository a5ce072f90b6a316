package main

// DefaultPreemption's decision, made reproducible. Upstream's PostFilter draws a random offset into
// the potential nodes (getOffsetRand), lists them in a map's order when other nodes were filtered
// with another code (NodeToStatus.NodesForStatusCode), runs its dry runs in parallel (so with fewer candidates wanted
// than potential nodes, which ones it finds varies), and breaks ties between equal candidates in map
// order (pickOneNodeForPreemption, "sort of randomly"; its last criterion reads time.Now() for every
// victim without status.startTime, so two such nodes tie too). The oracle therefore:
//   - gives the real PostFilter spread-scheduler's offset for the pod ("offsets" in the input):
//     getOffsetRand is replaced (linkname) by a function that returns it, under a lock held for the
//     whole PostFilter, since scenarios run in parallel;
//   - computes a second, deterministic view ("preemption" in the result): a second DefaultPreemption
//     instance on a handle whose Parallelizer runs one piece at a time, so DryRunPreemption visits the
//     potential nodes in the snapshot's order from that offset, as spread-scheduler does (with fewer
//     candidates wanted than potential nodes, upstream's own order and so its candidates are random); every candidate it found
//     with its victims, PDB violations and pickOneNodeForPreemption's criteria (unstarted victims all
//     at one "now"), and "best", the candidates that rank equal at the top;
//   - reports the real nomination and its victims, then hands the failure handler spread-scheduler's
//     nomination ("nominations"), so the nominator holds the same pods on both sides afterwards.
// Victims are never deleted (a reactor swallows the deletes, their DisruptionTarget patch and the
// clearing of lower-priority nominations): spread-scheduler's simulate does not apply preemption.

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	_ "unsafe" // go:linkname

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/parallelize"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

//go:linkname upstreamOffsetRand k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption.getOffsetRand
var upstreamOffsetRand func(int32) int32

var (
	offsetMu   sync.Mutex // held through a real PostFilter: nextOffset is its offset
	nextOffset int32
)

func init() {
	upstreamOffsetRand = func(n int32) int32 {
		if n <= 0 {
			return 0
		}
		return nextOffset % n
	}
}

type candidateJSON struct {
	Node          string   `json:"node"`
	Victims       []string `json:"victims"`
	PDBViolations int64    `json:"pdbViolations"`
	// pickOneNodeForPreemption's scores, in its order (higher is preferred): -PDB violations,
	// -highest victim priority, -sum of (priority + 2^31), -victims, earliest start of the highest-
	// priority victims in Unix ns (math.MaxInt64: "now", a victim without status.startTime).
	Criteria []int64 `json:"criteria"`
}

type preemptionJSON struct {
	Eligible       bool            `json:"eligible"`
	Offset         int32           `json:"offset"`
	NumCandidates  int32           `json:"numCandidates"`
	PotentialNodes int             `json:"potentialNodes"`
	Candidates     []candidateJSON `json:"candidates"`
	Best           []string        `json:"best"`
	Victims        []string        `json:"victims"` // of the real nomination
}

// sequential is a profile's handle whose Parallelizer runs one piece at a time, in index order.
type sequential struct{ fwk.Handle }

func (sequential) Parallelizer() fwk.Parallelizer { return parallelize.NewParallelizer(1) }

// hasPostFilter: the profile runs the named PostFilter plugin: enabled at postFilter, or in the
// (defaulted, merged) multiPoint list and not disabled at postFilter.
func hasPostFilter(profile *config.KubeSchedulerProfile, name string) bool {
	for _, p := range profile.Plugins.PostFilter.Enabled {
		if p.Name == name {
			return true
		}
	}
	for _, p := range profile.Plugins.PostFilter.Disabled {
		if p.Name == name || p.Name == "*" {
			return false
		}
	}
	for _, p := range profile.Plugins.MultiPoint.Enabled {
		if p.Name == name {
			return true
		}
	}
	return false
}

// buildPreemptors makes the second DefaultPreemption of each profile that runs one.
func buildPreemptors(ctx context.Context, profiles []config.KubeSchedulerProfile, inner map[string]framework.Framework) (map[string]*defaultpreemption.DefaultPreemption, error) {
	out := map[string]*defaultpreemption.DefaultPreemption{}
	factory := plugins.NewInTreeRegistry()[names.DefaultPreemption]
	for i := range profiles {
		profile := &profiles[i]
		if !hasPostFilter(profile, names.DefaultPreemption) {
			continue
		}
		pl, err := factory(ctx, pluginArgs(profile, names.DefaultPreemption), sequential{inner[profile.SchedulerName]})
		if err != nil {
			return nil, fmt.Errorf("plugin %s: %w", names.DefaultPreemption, err)
		}
		out[profile.SchedulerName] = pl.(*defaultpreemption.DefaultPreemption)
	}
	return out, nil
}

// preemptionView is the deterministic decision (see the header), on the PostFilter's own state.
func (w *world) preemptionView(ctx context.Context, profile string, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*preemptionJSON, string) {
	pl := w.preemptors[profile]
	if pl == nil {
		return nil, ""
	}
	v := &preemptionJSON{Candidates: []candidateJSON{}, Best: []string{}, Victims: []string{}}
	if ok, _ := pl.PodEligibleToPreemptOthers(ctx, pod, m.Get(pod.Status.NominatedNodeName)); !ok {
		return v, ""
	}
	v.Eligible = true
	// NodesForStatusCode lists the explicitly filtered nodes in its map's order (random) unless the
	// absent nodes are Unschedulable too; the view takes them in the snapshot's order, as upstream does
	// in that case (and as we do always).
	all, err := w.inner[profile].SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return v, err.Error()
	}
	var potential []fwk.NodeInfo
	for _, n := range all {
		if m.Get(n.Node().Name).Code() == fwk.Unschedulable {
			potential = append(potential, n)
		}
	}
	v.PotentialNodes = len(potential)
	if len(potential) == 0 {
		return v, ""
	}
	pdbs, err := pl.Evaluator.PdbLister.List(labels.Everything())
	if err != nil {
		return v, err.Error()
	}
	v.Offset, v.NumCandidates = pl.GetOffsetAndNumCandidates(int32(len(potential))) // nextOffset, under offsetMu
	candidates, _, _ := pl.Evaluator.DryRunPreemption(ctx, state, pod, potential, pdbs, v.Offset, v.NumCandidates)
	var top []int64
	for _, c := range candidates {
		victims := c.Victims()
		entry := candidateJSON{Node: c.Name(), Victims: podKeys(victims.Pods), PDBViolations: victims.NumPDBViolations,
			Criteria: criteria(victims.Pods, victims.NumPDBViolations)}
		v.Candidates = append(v.Candidates, entry)
		switch cmp := compareCriteria(entry.Criteria, top); {
		case top == nil || cmp > 0:
			top, v.Best = entry.Criteria, []string{entry.Node}
		case cmp == 0:
			v.Best = append(v.Best, entry.Node)
		}
	}
	sort.Strings(v.Best)
	return v, ""
}

// victimsOn is SelectVictimsOnNode for one node (the real nomination's victims), on copies.
func (w *world) victimsOn(ctx context.Context, profile string, state fwk.CycleState, pod *v1.Pod, node string) ([]string, error) {
	pl := w.preemptors[profile]
	info, err := w.inner[profile].SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil {
		return nil, err
	}
	pdbs, err := pl.Evaluator.PdbLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods, _, st := selectVictims(ctx, pl, state.Clone(), pod, info, pdbs)
	if !st.IsSuccess() {
		return nil, st.AsError()
	}
	return podKeys(pods), nil
}

func podKeys(pods []*v1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podKey(p))
	}
	return out
}

// criteria are pickOneNodeForPreemption's default score functions for one candidate (victims most
// important first, as SelectVictimsOnNode returns them).
func criteria(victims []*v1.Pod, violations int64) []int64 {
	highest := corev1helpers.PodPriority(victims[0])
	var sum int64
	for _, p := range victims {
		sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32+1)
	}
	start := func(p *v1.Pod) int64 {
		if p.Status.StartTime == nil {
			return math.MaxInt64 // "now": later than any recorded start
		}
		return p.Status.StartTime.UnixNano()
	}
	maxPriority, earliest := highest, start(victims[0])
	for _, p := range victims {
		switch prio := corev1helpers.PodPriority(p); {
		case prio == maxPriority:
			earliest = min(earliest, start(p))
		case prio > maxPriority:
			maxPriority, earliest = prio, start(p)
		}
	}
	return []int64{-violations, -int64(highest), -sum, -int64(len(victims)), earliest}
}

func compareCriteria(a, b []int64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			if a[i] > b[i] {
				return 1
			}
			return -1
		}
	}
	return 0
}

// preemptionResult puts the view and the real nomination's victims into the result, with the
// self-checks that hold whatever upstream's randomness: with every potential node dry-run (fewer
// potential nodes than candidates wanted, or no candidate that violates no PDB), the real nomination
// ranks best in the view, and the view finds a candidate exactly when the real PostFilter nominates.
func (w *world) preemptionResult(ctx context.Context, c *cycle, res *resultJSON) {
	v := c.preemption
	if v == nil {
		return
	}
	res.Preemption = v
	if c.nominated != "" {
		victims, err := w.victimsOn(ctx, c.pod.Spec.SchedulerName, c.postState, c.pod, c.nominated)
		if err != nil {
			res.Problems = append(res.Problems, fmt.Sprintf("victims on the real nomination %s: %v", c.nominated, err))
		}
		v.Victims = victims
	}
	everyNode := int(v.NumCandidates) >= v.PotentialNodes
	if !everyNode {
		everyNode = true
		for _, cand := range v.Candidates {
			everyNode = everyNode && cand.PDBViolations > 0
		}
		everyNode = everyNode && len(v.Candidates) < int(v.NumCandidates)
	}
	if !everyNode || !v.Eligible {
		return
	}
	if (c.nominated != "") != (len(v.Candidates) > 0) {
		res.Problems = append(res.Problems, fmt.Sprintf("preemption view: %d candidates, real nomination %q", len(v.Candidates), c.nominated))
	} else if c.nominated != "" && !slices.Contains(v.Best, c.nominated) {
		res.Problems = append(res.Problems, fmt.Sprintf("preemption view: real nomination %s not among the best %v", c.nominated, v.Best))
	}
}
