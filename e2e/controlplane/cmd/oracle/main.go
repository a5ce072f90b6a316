// Command oracle runs the upstream kube-scheduler framework (k8s.io/kubernetes v1.35.4, imported as a
// library, never copied) on scenarios that spread-scheduler also decides, and prints the same JSON as
// `spread-scheduler simulate --output json`, so a differential test can compare them field by field.
//
// Input: JSON lines on stdin, one scenario each:
//
//	{"id": "...", "objects": [<Node|Pod|Service|ReplicaSet|StatefulSet|ReplicationController>...],
//	 "config": <KubeSchedulerConfiguration v1>, "placements": {"ns/name": "node" | null}}
//
// Pending pods (no nodeName, schedulerName of the profile) are decided in queue order (priority, then
// creationTimestamp, then input order). After each decision the pod is placed where spread-scheduler
// placed it ("placements"), so both sides walk the same sequence even when ties were broken differently.
//
// Output: one JSON line per scenario, in the order they finish (-workers run at once): {"id": ..., "results": [{"pod", "code", "message", "best", "nodes"}]}.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	configscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

type scenario struct {
	ID         string             `json:"id"`
	Objects    []json.RawMessage  `json:"objects"`
	Config     json.RawMessage    `json:"config"`
	Placements map[string]*string `json:"placements"`
}

type filterJSON struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
}

type scoreJSON struct {
	Raw        int64 `json:"raw"`
	Normalized int64 `json:"normalized"`
}

type nodeJSON struct {
	Filter *filterJSON          `json:"filter"`
	Scores map[string]scoreJSON `json:"scores"`
	Total  *int64               `json:"total"`
}

type resultJSON struct {
	Pod     string              `json:"pod"`
	Code    string              `json:"code"`
	Message string              `json:"message"`
	Best    []string            `json:"best"`
	Nodes   map[string]nodeJSON `json:"nodes"`
}

type outputJSON struct {
	ID      string       `json:"id"`
	Error   string       `json:"error,omitempty"`
	Results []resultJSON `json:"results"`
}

func main() {
	metrics.Register() // the framework records plugin metrics; they must exist
	workers := flag.Int("workers", 4*goruntime.NumCPU(), "scenarios decided at once (each mostly waits on its informers' first sync)")
	flag.Parse()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<20), 256<<20)
	out := json.NewEncoder(os.Stdout)
	var mu sync.Mutex
	lines := make(chan []byte)
	var wg sync.WaitGroup
	for range max(*workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for line := range lines {
				var sc scenario
				if err := json.Unmarshal(line, &sc); err != nil {
					fmt.Fprintf(os.Stderr, "oracle: bad input line: %v\n", err)
					os.Exit(2)
				}
				results, err := run(&sc)
				o := outputJSON{ID: sc.ID, Results: results}
				if err != nil {
					o.Error = err.Error()
				}
				mu.Lock()
				if err := out.Encode(o); err != nil {
					os.Exit(3)
				}
				mu.Unlock()
			}
		}()
	}
	for in.Scan() {
		lines <- append([]byte(nil), in.Bytes()...)
	}
	close(lines)
	wg.Wait()
}

func loadProfile(raw json.RawMessage) (*config.KubeSchedulerProfile, error) {
	obj, _, err := configscheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok || len(cfg.Profiles) == 0 {
		return nil, fmt.Errorf("config has no profile")
	}
	return &cfg.Profiles[0], nil
}

func run(sc *scenario) ([]resultJSON, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops this scenario's informers
	profile, err := loadProfile(sc.Config)
	if err != nil {
		return nil, err
	}
	var nodes []*v1.Node
	var placed []*v1.Pod
	var pending []*v1.Pod
	var others []runtime.Object
	for _, raw := range sc.Objects {
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding object: %w", err)
		}
		switch o := obj.(type) {
		case *v1.Node:
			nodes = append(nodes, o)
		case *v1.Pod:
			if o.Status.Phase == v1.PodSucceeded || o.Status.Phase == v1.PodFailed {
				continue
			}
			if o.Spec.NodeName != "" {
				placed = append(placed, o)
			} else if o.Spec.SchedulerName == profile.SchedulerName {
				pending = append(pending, o)
			}
		default:
			others = append(others, obj)
		}
	}
	sort.SliceStable(pending, func(i, j int) bool {
		pi, pj := priority(pending[i]), priority(pending[j])
		if pi != pj {
			return pi > pj
		}
		return pending[i].CreationTimestamp.Before(&pending[j].CreationTimestamp)
	})
	client := fake.NewSimpleClientset(others...)
	factory := informers.NewSharedInformerFactory(client, 0)
	started := false
	var results []resultJSON
	for _, pod := range pending {
		snapshot := internalcache.NewSnapshot(placed, nodes)
		f, err := frameworkruntime.NewFramework(ctx, plugins.NewInTreeRegistry(), profile,
			frameworkruntime.WithSnapshotSharedLister(snapshot),
			frameworkruntime.WithInformerFactory(factory),
			frameworkruntime.WithClientSet(client),
		)
		if err != nil {
			return results, fmt.Errorf("building framework: %w", err)
		}
		if !started {
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			started = true
		}
		res, err := decide(ctx, f, profile, snapshot, pod)
		if err != nil {
			return results, err
		}
		results = append(results, res)
		key := pod.Namespace + "/" + pod.Name
		if target, ok := sc.Placements[key]; ok && target != nil {
			copied := pod.DeepCopy()
			copied.Spec.NodeName = *target
			placed = append(placed, copied)
		}
	}
	return results, nil
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

func status(s *fwk.Status) *filterJSON {
	if s == nil || s.IsSuccess() {
		return nil
	}
	return &filterJSON{Plugin: s.Plugin(), Reason: s.Message()}
}

// decide runs PreFilter and Filter through the framework, then PreScore/Score/NormalizeScore plugin by
// plugin (on the framework's own plugin instances' state keys) so raw and normalized scores are visible.
func decide(ctx context.Context, f framework.Framework, profile *config.KubeSchedulerProfile,
	snapshot *internalcache.Snapshot, pod *v1.Pod) (resultJSON, error) {
	res := resultJSON{Pod: pod.Namespace + "/" + pod.Name, Nodes: map[string]nodeJSON{}}
	all, err := snapshot.NodeInfos().List()
	if err != nil {
		return res, err
	}
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	if len(all) == 0 {
		res.Code, res.Message = "UnschedulableAndUnresolvable", "no nodes available to schedule pods"
		return res, nil
	}
	state := framework.NewCycleState()
	preRes, s, plugs := f.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = plugs
	if !s.IsSuccess() {
		if !s.IsRejected() {
			res.Code, res.Message = "Error", s.AsError().Error()
			return res, nil
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
		for _, n := range all {
			res.Nodes[n.Node().Name] = nodeJSON{Filter: status(s), Scores: map[string]scoreJSON{}}
		}
		fit := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diagnosis}
		res.Code, res.Message = "Unschedulable", fit.Error()
		return res, nil
	}
	var feasible []fwk.NodeInfo
	for _, n := range all {
		name := n.Node().Name
		if !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
			absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sortedSet(plugs)))
			diagnosis.NodeToStatus.SetAbsentNodesStatus(absent)
			res.Nodes[name] = nodeJSON{Filter: status(absent), Scores: map[string]scoreJSON{}}
			continue
		}
		st := f.RunFilterPlugins(ctx, state, pod, n)
		if st.IsSuccess() {
			feasible = append(feasible, n)
			res.Nodes[name] = nodeJSON{Scores: map[string]scoreJSON{}}
			continue
		}
		if !st.IsRejected() {
			res.Code, res.Message = "Error", st.AsError().Error()
			return res, nil
		}
		diagnosis.NodeToStatus.Set(name, st)
		res.Nodes[name] = nodeJSON{Filter: status(st), Scores: map[string]scoreJSON{}}
	}
	if len(feasible) == 0 {
		fit := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diagnosis}
		res.Code, res.Message = "Unschedulable", fit.Error()
		return res, nil
	}
	if len(feasible) == 1 {
		res.Code, res.Best = "Success", []string{feasible[0].Node().Name}
		return res, nil
	}
	totals := make([]int64, len(feasible))
	for _, ref := range scorePlugins(profile) {
		pl, err := plugins.NewInTreeRegistry()[ref.Name](ctx, pluginArgs(profile, ref.Name), f)
		if err != nil {
			return res, fmt.Errorf("plugin %s: %w", ref.Name, err)
		}
		scorer, ok := pl.(fwk.ScorePlugin)
		if !ok {
			continue
		}
		if pre, ok := pl.(fwk.PreScorePlugin); ok {
			ps := pre.PreScore(ctx, state, pod, feasible)
			if ps.IsSkip() {
				continue
			}
			if !ps.IsSuccess() {
				res.Code = "Error"
				res.Message = fmt.Sprintf("running PreScore plugin %q: %v", ref.Name, ps.AsError())
				return res, nil
			}
		}
		scores := make(fwk.NodeScoreList, len(feasible))
		raw := make([]int64, len(feasible))
		for i, n := range feasible {
			v, st := scorer.Score(ctx, state, pod, n)
			if !st.IsSuccess() {
				res.Code, res.Message = "Error", st.AsError().Error()
				return res, nil
			}
			scores[i] = fwk.NodeScore{Name: n.Node().Name, Score: v}
			raw[i] = v
		}
		if ext := scorer.ScoreExtensions(); ext != nil {
			if st := ext.NormalizeScore(ctx, state, pod, scores); !st.IsSuccess() {
				res.Code, res.Message = "Error", st.AsError().Error()
				return res, nil
			}
		}
		weight := int64(ref.Weight)
		if weight == 0 {
			weight = 1
		}
		for i, n := range feasible {
			entry := res.Nodes[n.Node().Name]
			entry.Scores[ref.Name] = scoreJSON{Raw: raw[i], Normalized: scores[i].Score}
			totals[i] += scores[i].Score * weight
		}
	}
	best := int64(-1)
	for i, n := range feasible {
		entry := res.Nodes[n.Node().Name]
		total := totals[i]
		entry.Total = &total
		res.Nodes[n.Node().Name] = entry
		if total > best {
			best, res.Best = total, nil
		}
		if total == best {
			res.Best = append(res.Best, n.Node().Name)
		}
	}
	sort.Strings(res.Best)
	res.Code = "Success"
	return res, nil
}

func sortedSet(s interface{ UnsortedList() []string }) []string {
	out := s.UnsortedList()
	sort.Strings(out)
	return out
}

// scorePlugins lists the profile's Score plugins with weights, in configured order (multiPoint first,
// as the framework expands it; the profiles used here configure everything through multiPoint).
func scorePlugins(profile *config.KubeSchedulerProfile) []config.Plugin {
	seen := map[string]bool{}
	var out []config.Plugin
	disabled := map[string]bool{}
	for _, p := range profile.Plugins.Score.Disabled {
		disabled[p.Name] = true
	}
	for _, p := range append(append([]config.Plugin{}, profile.Plugins.Score.Enabled...), profile.Plugins.MultiPoint.Enabled...) {
		if seen[p.Name] || disabled[p.Name] || disabled["*"] {
			continue
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	return out
}

func pluginArgs(profile *config.KubeSchedulerProfile, name string) runtime.Object {
	for _, pc := range profile.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}
