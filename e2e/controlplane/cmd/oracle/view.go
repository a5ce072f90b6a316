package main

// The second view: every node filtered and every feasible node scored, plugin by plugin with raw and
// normalized scores, on the real framework and this cycle's snapshot but a fresh CycleState. It is
// what the decision would be without batching and without percentageOfNodesToScore, and it is where
// raw scores come from (the real Score step only returns weighted normalized ones).

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/apis/config"
	configscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
)

func loadConfig(raw json.RawMessage) (*config.KubeSchedulerConfiguration, error) {
	obj, _, err := configscheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("decoding config: %w", err)
	}
	cfg, ok := obj.(*config.KubeSchedulerConfiguration)
	if !ok || len(cfg.Profiles) == 0 {
		return nil, fmt.Errorf("config has no profile")
	}
	return cfg, nil
}

// scorer is a second instance of a profile's Score plugin, on the real framework's handle: it reads
// the PreScore state the real instance wrote (same key) and returns its raw score.
type scorer struct {
	name   string
	weight int64
	plugin fwk.ScorePlugin
}

func buildScorers(ctx context.Context, profiles []config.KubeSchedulerProfile, inner map[string]framework.Framework) (map[string][]scorer, error) {
	registry := plugins.NewInTreeRegistry()
	out := map[string][]scorer{}
	for i := range profiles {
		profile := &profiles[i]
		for _, ref := range scorePlugins(profile) {
			factory, ok := registry[ref.Name]
			if !ok {
				continue
			}
			pl, err := factory(ctx, pluginArgs(profile, ref.Name), secondInstance{inner[profile.SchedulerName]})
			if err != nil {
				return nil, fmt.Errorf("plugin %s: %w", ref.Name, err)
			}
			if sp, ok := pl.(fwk.ScorePlugin); ok {
				out[profile.SchedulerName] = append(out[profile.SchedulerName], scorer{ref.Name, int64(max(ref.Weight, 1)), sp})
			}
		}
	}
	return out, nil
}

// secondInstance is the handle of a plugin's second instance: the real profile's, under another
// ProfileName, so what a plugin registers per profile on shared informers (DynamicResources' pod
// indexer, from 1.37) does not collide with the real instance's.
type secondInstance struct {
	framework.Framework
}

func (h secondInstance) ProfileName() string { return h.Framework.ProfileName() + "/oracle-view" }

func (w *world) weights(profile string) map[string]int64 {
	out := map[string]int64{}
	for _, s := range w.scorers[profile] {
		out[s.name] = s.weight
	}
	return out
}

// rawScores runs each Score plugin the real PreScore did not skip, then NormalizeScore on a copy:
// node -> plugin -> {raw, normalized (unweighted)}.
func (w *world) rawScores(ctx context.Context, profile string, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (map[string]map[string]scoreJSON, string) {
	out := map[string]map[string]scoreJSON{}
	for _, n := range nodes {
		out[n.Node().Name] = map[string]scoreJSON{}
	}
	skip := state.GetSkipScorePlugins()
	for _, s := range w.scorers[profile] {
		if skip.Has(s.name) {
			continue
		}
		list := make(fwk.NodeScoreList, len(nodes))
		raw := make([]int64, len(nodes))
		for i, n := range nodes {
			v, st := s.plugin.Score(ctx, state, pod, n)
			if !st.IsSuccess() {
				return out, fmt.Sprintf("raw %s on %s: %v", s.name, n.Node().Name, st.AsError())
			}
			list[i], raw[i] = fwk.NodeScore{Name: n.Node().Name, Score: v}, v
		}
		if ext := s.plugin.ScoreExtensions(); ext != nil {
			if st := ext.NormalizeScore(ctx, state, pod, list); !st.IsSuccess() {
				return out, fmt.Sprintf("normalize %s: %v", s.name, st.AsError())
			}
		}
		for i, n := range nodes {
			out[n.Node().Name][s.name] = scoreJSON{Raw: raw[i], Normalized: list[i].Score}
		}
	}
	return out, ""
}

// fullView decides the pod the way schedulePod does with every node searched and no hint (a nominated
// node that fits does not end the search here).
func (w *world) fullView(ctx context.Context, profile string, pod *v1.Pod) *viewJSON {
	f := w.inner[profile]
	v := &viewJSON{Best: []string{}, Feasible: []string{}, UnschedulablePlugins: []string{}, Nodes: map[string]nodeJSON{}}
	all, err := f.SnapshotSharedLister().NodeInfos().List()
	if err != nil || len(all) == 0 {
		v.Code, v.Message = "UnschedulableAndUnresolvable", "no nodes available to schedule pods"
		return v
	}
	state := framework.NewCycleState()
	diagnosis := framework.Diagnosis{NodeToStatus: framework.NewDefaultNodeToStatus()}
	unschedulable := func() *viewJSON {
		fit := &framework.FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diagnosis}
		v.Code, v.Message = "Unschedulable", fit.Error()
		v.UnschedulablePlugins = sortedSet(diagnosis.UnschedulablePlugins)
		return v
	}
	preRes, s, plugs := f.RunPreFilterPlugins(ctx, state, pod)
	diagnosis.UnschedulablePlugins = plugs
	if !s.IsSuccess() {
		if !s.IsRejected() {
			v.Code, v.Message = "Error", s.AsError().Error()
			return v
		}
		diagnosis.NodeToStatus.SetAbsentNodesStatus(s)
		diagnosis.PreFilterMsg = s.Message()
		diagnosis.AddPluginStatus(s)
		for _, n := range all {
			v.Nodes[n.Node().Name] = nodeJSON{Filter: status(s), Scores: map[string]scoreJSON{}}
		}
		return unschedulable()
	}
	// status.nominatedNodeName is filtered first, whatever PreFilter allowed (evaluateNominatedNode).
	// When it fits, the real cycle stops there and this view goes on over every node; when it is
	// rejected, its verdict and its plugin stay, as in the real cycle, before the absent nodes' text.
	nominated := ""
	if nnn := pod.Status.NominatedNodeName; nnn != "" {
		if n, err := f.SnapshotSharedLister().NodeInfos().Get(nnn); err == nil {
			if st := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, n); st.IsRejected() {
				diagnosis.NodeToStatus.Set(nnn, st)
				diagnosis.AddPluginStatus(st)
				v.Nodes[nnn] = nodeJSON{Filter: status(st), Scores: map[string]scoreJSON{}}
				nominated = nnn
			}
		}
	}
	// Printed before Filter runs: AddPluginStatus below adds Filter's rejectors to the same set.
	absent := fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
		fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(plugs)))
	var feasible []fwk.NodeInfo
	for _, n := range all {
		name := n.Node().Name
		if name == nominated && !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
			continue // its own verdict, not the absent nodes'
		}
		if !preRes.AllNodes() && !preRes.NodeNames.Has(name) {
			diagnosis.NodeToStatus.SetAbsentNodesStatus(absent)
			v.Nodes[name] = nodeJSON{Filter: status(absent), Scores: map[string]scoreJSON{}}
			continue
		}
		st := f.RunFilterPluginsWithNominatedPods(ctx, state, pod, n)
		if st.IsSuccess() {
			feasible = append(feasible, n)
			v.Nodes[name] = nodeJSON{Scores: map[string]scoreJSON{}}
			v.Feasible = append(v.Feasible, name)
			continue
		}
		if !st.IsRejected() {
			// Every node's error is kept (the real cycle's parallel Filter reports whichever failed
			// first): the view is the first one's, in the snapshot's order.
			if v.Code != "Error" {
				v.Code, v.Message = "Error", st.AsError().Error()
			}
			v.Nodes[name] = nodeJSON{Filter: status(st), Scores: map[string]scoreJSON{}}
			continue
		}
		diagnosis.NodeToStatus.Set(name, st)
		diagnosis.AddPluginStatus(st)
		v.Nodes[name] = nodeJSON{Filter: status(st), Scores: map[string]scoreJSON{}}
	}
	sort.Strings(v.Feasible)
	v.UnschedulablePlugins = sortedSet(diagnosis.UnschedulablePlugins)
	if v.Code == "Error" {
		return v
	}
	switch len(feasible) {
	case 0:
		return unschedulable()
	case 1:
		v.Code, v.Best = "Success", []string{feasible[0].Node().Name}
		return v
	}
	if st := f.RunPreScorePlugins(ctx, state, pod, feasible); !st.IsSuccess() {
		v.Code, v.Message = "Error", st.AsError().Error()
		return v
	}
	raw, problem := w.rawScores(ctx, profile, state, pod, feasible)
	if problem != "" {
		v.Code, v.Message = "Error", problem
		return v
	}
	weights := w.weights(profile)
	best := int64(-1 << 62)
	for _, n := range feasible {
		name := n.Node().Name
		entry := v.Nodes[name]
		total := int64(0)
		for plugin, sc := range raw[name] {
			entry.Scores[plugin] = sc
			total += sc.Normalized * weights[plugin]
		}
		entry.Total = &total
		v.Nodes[name] = entry
		if total > best {
			best, v.Best = total, nil
		}
		if total == best {
			v.Best = append(v.Best, name)
		}
	}
	sort.Strings(v.Best)
	v.Code = "Success"
	return v
}

func status(s *fwk.Status) *filterJSON {
	if s == nil || s.IsSuccess() {
		return nil
	}
	return &filterJSON{Plugin: s.Plugin(), Reason: s.Message(), Code: s.Code().String()}
}

func sortedSet(s sets.Set[string]) []string {
	if s == nil {
		return []string{}
	}
	return sets.List(s)
}

// scorePlugins lists the profile's Score plugins with weights, in configured order (multiPoint first,
// as the framework expands it).
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
