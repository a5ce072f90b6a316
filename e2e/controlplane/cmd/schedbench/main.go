// Command schedbench times upstream kube-scheduler's own scheduling algorithm in-process (no API):
// scheduler.New with our profile, its real cache and incremental snapshot, SchedulePod per pending
// pod, then AssumePod on the chosen node, exactly as the scheduling cycle does. It reads the same
// workload file as bench/inprocess.py so both sides schedule the same cluster, in the same order.
// Pending pods annotated bench.spread-scheduler.io/unmeasured=true (scheduler_perf's init pods) are
// scheduled the same way first, before the clock starts, and are not counted.
//
// With -status-per-s / -changes-per-s, node churn as bench/churn.py describes it is applied through
// the scheduler's cache before each measured pod, by elapsed time (the same rules as our side).
//
//	schedbench -config profile.yaml -objects workload.json  ->  JSON: pods, seconds, p50/p99, peak RSS
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	configscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/profile"
)

// unmeasuredAnnotation marks the pods scheduled before the clock starts (bench/workloads.py UNMEASURED).
const unmeasuredAnnotation = "bench.spread-scheduler.io/unmeasured"

// Node churn (bench/churn.py): the key of the changed label and taint, and the strides over nodes.
const (
	churnKey     = "bench.spread-scheduler.io/churn"
	statusStride = 7919
	changeStride = 104729
)

func main() {
	configPath := flag.String("config", "", "KubeSchedulerConfiguration (v1) file")
	objectsPath := flag.String("objects", "", "JSON list of Nodes, Pods and Services")
	flag.Float64Var(&statusPerS, "status-per-s", 0, "node status updates per second (bench/churn.py)")
	flag.Float64Var(&changesPerS, "changes-per-s", 0, "node label/taint changes per second (bench/churn.py)")
	flag.Parse()
	if err := run(*configPath, *objectsPath); err != nil {
		fmt.Fprintln(os.Stderr, "schedbench:", err)
		os.Exit(1)
	}
}

var statusPerS, changesPerS float64

// churn applies bench/churn.py's updates due at elapsed to the scheduler's cache.
type churn struct {
	nodes             []*v1.Node // current objects, in the workload's order
	statuses, changes int
	version           int
}

func (c *churn) applyDue(update func(old, new *v1.Node), elapsed time.Duration) {
	s := elapsed.Seconds()
	for c.statuses < int(s*statusPerS) {
		c.update(update, c.statuses*statusStride%len(c.nodes), -1)
		c.statuses++
	}
	for c.changes < int(s*changesPerS) {
		c.update(update, c.changes*changeStride%len(c.nodes), c.changes)
		c.changes++
	}
}

func (c *churn) update(update func(old, new *v1.Node), i, change int) {
	old := c.nodes[i]
	n := old.DeepCopy()
	c.version++
	n.ResourceVersion = strconv.Itoa(1_000_000_000 + c.version)
	switch {
	case change < 0: // kubelet's heartbeat: nothing the scheduler reads
		for j := range n.Status.Conditions {
			n.Status.Conditions[j].LastHeartbeatTime = metav1.Now()
		}
	case change%2 == 0:
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[churnKey] = strconv.Itoa(change)
	default:
		kept := n.Spec.Taints[:0:0]
		for _, t := range n.Spec.Taints {
			if t.Key != churnKey {
				kept = append(kept, t)
			}
		}
		if len(kept) == len(n.Spec.Taints) {
			kept = append(kept, v1.Taint{Key: churnKey, Effect: v1.TaintEffectPreferNoSchedule})
		}
		n.Spec.Taints = kept
	}
	update(old, n)
	c.nodes[i] = n
}

func run(configPath, objectsPath string) error {
	klog.SetLogger(klog.Background().V(10)) // quiet
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	data, err := os.ReadFile(configPath)
	if err != nil {
		return err
	}
	obj, _, err := configscheme.Codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return fmt.Errorf("config: %w", err)
	}
	cfg := obj.(*config.KubeSchedulerConfiguration)
	raw, err := os.ReadFile(objectsPath)
	if err != nil {
		return err
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return err
	}
	var nodes []*v1.Node
	var placed, pending []*v1.Pod
	var others []runtime.Object
	for _, item := range items {
		o, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(item, nil, nil)
		if err != nil {
			return err
		}
		switch t := o.(type) {
		case *v1.Node:
			nodes = append(nodes, t)
		case *v1.Pod:
			if t.Spec.NodeName != "" {
				placed = append(placed, t)
			} else {
				pending = append(pending, t)
			}
		default:
			others = append(others, o)
		}
	}
	sort.SliceStable(pending, func(i, j int) bool {
		return pending[i].CreationTimestamp.Before(&pending[j].CreationTimestamp)
	})
	unmeasured := 0
	for unmeasured < len(pending) && pending[unmeasured].Annotations[unmeasuredAnnotation] == "true" {
		unmeasured++
	}
	for _, pod := range pending[unmeasured:] {
		if pod.Annotations[unmeasuredAnnotation] == "true" {
			return fmt.Errorf("pod %s/%s: unmeasured pods must be queued before measured ones", pod.Namespace, pod.Name)
		}
	}
	client := fake.NewSimpleClientset(others...)
	factory := informers.NewSharedInformerFactory(client, 0)
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	sched, err := scheduler.New(ctx, client, factory, nil, profile.NewRecorderFactory(broadcaster),
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
	)
	if err != nil {
		return fmt.Errorf("scheduler.New: %w", err)
	}
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	logger := klog.FromContext(ctx)
	for _, n := range nodes {
		sched.Cache.AddNode(logger, n)
	}
	for _, p := range placed {
		if err := sched.Cache.AddPod(logger, p); err != nil {
			return err
		}
	}
	fwk := sched.Profiles[cfg.Profiles[0].SchedulerName]
	reported := false
	scheduleOne := func(pod *v1.Pod) (bool, error) {
		state := framework.NewCycleState()
		result, err := schedulePod(ctx, sched, fwk, state, pod)
		if err != nil {
			if !reported {
				reported = true // a pod that does not fit is expected; say what the first failure was
				fmt.Fprintf(os.Stderr, "schedbench: %s: %v\n", pod.Name, err)
			}
			return false, nil
		}
		assumed := pod.DeepCopy()
		assumed.Spec.NodeName = result.SuggestedHost
		if err := sched.Cache.AssumePod(logger, assumed); err != nil {
			return false, err
		}
		if len(pod.Spec.ResourceClaims) > 0 {
			// Reserve: DynamicResources keeps the allocation in flight, so the next pod finds its
			// device taken (no PreBind, as on our side: the claim is never written).
			if status := fwk.RunReservePluginsReserve(ctx, state, assumed, result.SuggestedHost); !status.IsSuccess() {
				return false, status.AsError()
			}
		}
		return true, nil
	}
	for _, pod := range pending[:unmeasured] {
		if _, err := scheduleOne(pod); err != nil {
			return err
		}
	}
	measured := pending[unmeasured:]
	durations := make([]time.Duration, 0, len(measured))
	scheduled := 0
	// As the informer's update handler does for a node: the cache takes the new object; the next
	// SchedulePod's UpdateSnapshot re-clones that node only.
	updateNode := func(old, new *v1.Node) { sched.Cache.UpdateNode(logger, old, new) }
	nodeChurn := &churn{nodes: append([]*v1.Node(nil), nodes...)}
	start := time.Now()
	for _, pod := range measured {
		nodeChurn.applyDue(updateNode, time.Since(start))
		t0 := time.Now()
		placed, err := scheduleOne(pod)
		if err != nil {
			return err
		}
		if placed {
			scheduled++
		}
		durations = append(durations, time.Since(t0))
	}
	total := time.Since(start)
	sort.Slice(durations, func(i, j int) bool { return durations[i] < durations[j] })
	p := func(q float64) float64 {
		if len(durations) == 0 {
			return 0
		}
		idx := int(float64(len(durations))*q) - 1
		if idx < 0 {
			idx = 0
		}
		return float64(durations[idx].Microseconds()) / 1000
	}
	out := map[string]any{
		"pods": len(measured), "unmeasured": unmeasured, "scheduled": scheduled, "seconds": total.Seconds(),
		"pods_per_s": float64(len(measured)) / total.Seconds(), "p50_ms": p(0.5), "p99_ms": p(0.99),
		"peak_rss_mb": peakRSS(), "node_updates": nodeChurn.statuses + nodeChurn.changes,
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmHWM:")), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}
