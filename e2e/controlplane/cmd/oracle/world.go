package main

// One scenario's world: upstream's scheduler.New on a fake clientset, driven one ScheduleOne at a
// time, with thin wrappers that watch (and, for ties, steer) the real cycle. See main.go's header.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	testingclock "k8s.io/utils/clock/testing"
)

var podsGVR = v1.SchemeGroupVersion.WithResource("pods")

// settleTimeout bounds every wait for an informer to deliver what the fake API just stored.
const settleTimeout = 30 * time.Second

// cycle is what the wrappers saw of one pod's scheduling cycle.
type cycle struct {
	pod *v1.Pod

	preRes     *fwk.PreFilterResult
	prePlugins sets.Set[string]
	hint       string
	// The stored batch may have outlived maxBatchAge (500 ms of wall clock, batch.go) by the time
	// GetNodeHint looked: upstream's expiry check reads time.Now(), and a loaded machine can run a
	// scenario's cycles that far apart. simulate's clock stands still.
	batchMayHaveExpired bool

	mu          sync.Mutex // Filter runs in parallel
	filterCalls []string
	filtered    map[string]*fwk.Status

	scores []fwk.NodePluginScores // the real Score step, weighted
	raw    map[string]map[string]scoreJSON

	scheduled       bool // SchedulePod returned a host
	result          scheduler.ScheduleResult
	fitErr          *framework.FitError
	messageBefore   string
	postFilterMsg   string
	postFiltered    bool // RunPostFilterPlugins ran: the failure's NominatingInfo is its answer
	nominated       string
	failed          bool
	failCode        string
	failMessage     string
	binding         bool   // the binding cycle began (WaitOnPermit): a later failure is the binding's
	bindFailed      bool   // the binding cycle failed (PreBind, Bind): FailureHandler had this
	bindMessage     string // its status message
	full            *viewJSON
	problems        []string
	nominationFixed bool            // the nominator got our nomination, which upstream's view does not rank best
	preemption      *preemptionJSON // the deterministic view of DefaultPreemption's decision (preemption.go)
	postState       fwk.CycleState  // PostFilter's state, for the real nomination's victims
}

type world struct {
	client     *fake.Clientset
	sched      *scheduler.Scheduler
	inner      map[string]framework.Framework // the real profiles, before wrapping
	scorers    map[string][]scorer
	preemptors map[string]*defaultpreemption.DefaultPreemption // second instances (preemption.go)
	placements map[string]*string
	rankings   map[string][]string
	offsets    map[string]int32  // our DefaultPreemption's offset per pod
	nominated  map[string]string // our DefaultPreemption's nomination per pod
	current    *cycle            // the cycle under way: ScheduleOne runs one at a time here
	late       []string
	versions   versions // resourceVersions of storage objects (volumes.go)
	generated  int      // claims created with generateName (claims.go)
	writesMu   sync.Mutex
	writes     []string  // PreBind's volume writes since the last finish (volumes.go)
	storedAt   time.Time // just before the last StoreScheduleResults that stored a new batch
}

// maxBatchAge is batch.go's: stored results older than this give no hint.
const maxBatchAge = 500 * time.Millisecond

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

func (w *world) ours(p *v1.Pod) string {
	if target, ok := w.placements[podKey(p)]; ok && target != nil {
		return *target
	}
	return ""
}

// observed is a profile's real framework with the calls schedulePod makes on it recorded. Every
// other method (and every call the queue, cache or plugins make) goes straight to the real one.
type observed struct {
	framework.Framework
	w *world
}

func (o *observed) RunPreFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod) (*fwk.PreFilterResult, *fwk.Status, sets.Set[string]) {
	res, status, plugins := o.Framework.RunPreFilterPlugins(ctx, state, pod)
	if c := o.w.current; c != nil {
		// A copy: findNodesThatPassFilters adds Filter's rejectors to this very set afterwards, but the
		// absent nodes' status text was printed from it as PreFilter left it.
		c.preRes, c.prePlugins = res, plugins.Clone()
	}
	return res, status, plugins
}

// noteHint records the hint batching offered (GetNodeHint, whose signature is per release: compat_*.go)
// and whether the stored batch may have expired by the time it was asked (answered: when it returned).
func (w *world) noteHint(hint string, answered time.Time) {
	if c := w.current; c != nil {
		c.hint = hint
		c.batchMayHaveExpired = !w.storedAt.IsZero() && answered.Sub(w.storedAt) >= maxBatchAge
	}
}

// WaitOnPermit is where upstream's binding cycle begins: a failure handled after it is the binding's.
func (o *observed) WaitOnPermit(ctx context.Context, pod *v1.Pod) *fwk.Status {
	if c := o.w.current; c != nil && c.pod.UID == pod.UID {
		c.mu.Lock()
		c.binding = true
		c.mu.Unlock()
	}
	return o.Framework.WaitOnPermit(ctx, pod)
}

// StoreScheduleResults notes when a new batch may have been stored (its creationTime is read inside).
func (o *observed) StoreScheduleResults(ctx context.Context, signature fwk.PodSignature, hintedNode, chosenNode string,
	otherNodes framework.SortedScoredNodes, cycleCount int64) {
	if hintedNode != chosenNode {
		o.w.storedAt = time.Now()
	}
	o.Framework.StoreScheduleResults(ctx, signature, hintedNode, chosenNode, otherNodes, cycleCount)
}

func (o *observed) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *v1.Pod, info fwk.NodeInfo) *fwk.Status {
	status := o.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
	if c := o.w.current; c != nil {
		c.mu.Lock()
		c.filterCalls = append(c.filterCalls, info.Node().Name)
		c.filtered[info.Node().Name] = status
		c.mu.Unlock()
	}
	return status
}

// RunScorePlugins records the real scores and raw ones from the same CycleState, then breaks a tie
// our way: upstream pops the highest (TotalScore, Randomizer), and Randomizer is 0 without extenders.
func (o *observed) RunScorePlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) ([]fwk.NodePluginScores, *fwk.Status) {
	ranking := o.w.rankings[podKey(pod)]
	rank := make(map[string]int, len(ranking)) // each ranked node's place in our ranking, 0 first
	for i, name := range ranking {
		rank[name] = i
	}
	if len(ranking) > 0 {
		// The feasible nodes in our ranking's order (upstream's order is whichever its parallel
		// Filter finished in): the heap batching keeps is then laid out as ours, which matters
		// where tie-breakers are equal (1.37 rescores nodes into entries with Randomizer 0).
		// Sorted in place, so prioritizeNodes' extender scores stay aligned with nodes[i].
		sort.SliceStable(nodes, func(i, j int) bool {
			ri, iok := rank[nodes[i].Node().Name]
			rj, jok := rank[nodes[j].Node().Name]
			if iok != jok {
				return iok
			}
			return iok && ri < rj
		})
	}
	scores, status := o.Framework.RunScorePlugins(ctx, state, pod, nodes)
	c := o.w.current
	if c == nil || !status.IsSuccess() {
		return scores, status
	}
	c.scores = scores
	raw, problem := o.w.rawScores(ctx, o.ProfileName(), state, pod, nodes)
	c.raw = raw
	if problem != "" {
		c.problems = append(c.problems, problem)
	}
	top := int64(-1 << 62)
	for _, s := range scores {
		top = max(top, s.TotalScore)
	}
	if len(ranking) > 0 {
		for i := range scores {
			if place, ok := rank[scores[i].Name]; ok {
				scores[i].Randomizer = len(ranking) - place
			}
		}
	} else if ours := o.w.ours(pod); ours != "" {
		for i := range scores {
			if scores[i].Name == ours && scores[i].TotalScore == top {
				scores[i].Randomizer = 1
			}
		}
	}
	return scores, status
}

// RunPostFilterPlugins gives DefaultPreemption our offset and records the deterministic view first.
func (o *observed) RunPostFilterPlugins(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	offsetMu.Lock()
	defer offsetMu.Unlock()
	nextOffset = o.w.offsets[podKey(pod)]
	view, problem := o.w.preemptionView(ctx, o.ProfileName(), state, pod, m)
	res, status := o.Framework.RunPostFilterPlugins(ctx, state, pod, m)
	if c := o.w.current; c != nil {
		c.postFilterMsg, c.postFiltered = status.Message(), true
		c.preemption, c.postState = view, state
		if problem != "" {
			c.problems = append(c.problems, "preemption view: "+problem)
		}
	}
	return res, status
}

func run(sc *scenario) ([]resultJSON, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // stops this scenario's informers
	cfg, err := loadConfig(sc.Config)
	if err != nil {
		return nil, err
	}
	ours := map[string]bool{}
	for _, p := range cfg.Profiles {
		ours[p.SchedulerName] = true
	}
	var initial []runtime.Object
	var pending []*v1.Pod
	for i, raw := range sc.Objects {
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("decoding object: %w", err)
		}
		versionStorage(obj)
		versionClaim(obj)
		if pod, ok := obj.(*v1.Pod); ok {
			// The scheduler's pod informer drops terminal pods with a field selector; the fake API ignores it.
			if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
				continue
			}
			if pod.UID == "" { // the cache and queue key pods by UID
				pod.UID = types.UID(fmt.Sprintf("oracle-%d", i))
			}
			if pod.Spec.NodeName == "" && ours[pod.Spec.SchedulerName] {
				pending = append(pending, pod)
				continue
			}
		}
		initial = append(initial, obj)
	}
	// Arrival order: creationTimestamp, then input order (the queue orders by priority, then arrival).
	sort.SliceStable(pending, func(i, j int) bool {
		return pending[i].CreationTimestamp.Before(&pending[j].CreationTimestamp)
	})

	client := fake.NewSimpleClientset(initial...)
	w := &world{client: client, placements: sc.Placements, rankings: sc.Rankings, inner: map[string]framework.Framework{},
		offsets: sc.Offsets, nominated: sc.Nominations}
	client.PrependReactor("create", "pods", w.bind)
	client.PrependReactor("delete", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, nil // preemption victims stay: simulate does not apply preemption
	})
	client.PrependReactor("patch", "pods", w.keepNominations)
	w.versions.last.Store(1)
	client.PrependReactor("update", "persistentvolumes", w.bindVolume)
	client.PrependReactor("update", "persistentvolumeclaims", w.provision)
	client.PrependReactor("update", "resourceclaims", w.writeClaim)
	client.PrependReactor("patch", "resourceclaims", w.patchClaim)
	client.PrependReactor("create", "resourceclaims", w.createClaim)
	if delay := os.Getenv("ORACLE_CLAIM_WATCH_DELAY"); delay != "" {
		d, err := time.ParseDuration(delay)
		if err != nil {
			return nil, fmt.Errorf("ORACLE_CLAIM_WATCH_DELAY: %w", err)
		}
		client.PrependWatchReactor("resourceclaims", w.delayedWatch(d))
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	clock := testingclock.NewFakeClock(time.Now())
	sched, err := scheduler.New(ctx, client, factory, nil,
		fakeRecorders,
		scheduler.WithProfiles(cfg.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cfg.PercentageOfNodesToScore),
		scheduler.WithParallelism(cfg.Parallelism),
		scheduler.WithPodInitialBackoffSeconds(cfg.PodInitialBackoffSeconds),
		scheduler.WithPodMaxBackoffSeconds(cfg.PodMaxBackoffSeconds),
		scheduler.WithExtenders(cfg.Extenders...),
		scheduler.WithClock(clock),
	)
	if err != nil {
		return nil, fmt.Errorf("scheduler.New: %w", err)
	}
	w.sched = sched
	for name, f := range sched.Profiles {
		w.inner[name] = f
		sched.Profiles[name] = &observed{Framework: f, w: w}
	}
	if w.scorers, err = buildScorers(ctx, cfg.Profiles, w.inner); err != nil {
		return nil, err
	}
	if w.preemptors, err = buildPreemptors(ctx, cfg.Profiles, w.inner); err != nil {
		return nil, err
	}
	w.wrap()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	if err := sched.WaitForHandlersSync(ctx); err != nil {
		return nil, fmt.Errorf("waiting for handlers: %w", err)
	}
	queue, ok := sched.SchedulingQueue.(*internalqueue.PriorityQueue)
	if !ok {
		return nil, fmt.Errorf("unexpected queue %T", sched.SchedulingQueue)
	}
	for i, p := range pending {
		clock.Step(time.Millisecond)
		if err := client.Tracker().Add(p); err != nil {
			return nil, fmt.Errorf("adding %s: %w", podKey(p), err)
		}
		if err := settle(func() bool { pods, _ := queue.PendingPods(); return len(pods) > i }); err != nil {
			return nil, fmt.Errorf("%s never reached the queue: %w", podKey(p), err)
		}
	}

	var results []resultJSON
	for len(queue.PodsInActiveQ()) > 0 {
		if err := w.settleClaims(); err != nil {
			return results, err
		}
		w.current = nil
		sched.ScheduleOne(ctx)
		if w.current == nil {
			return results, fmt.Errorf("ScheduleOne popped nothing")
		}
		res, err := w.finish(ctx, w.current)
		if err != nil {
			return results, err
		}
		results = append(results, res)
	}
	// Pods the queue never popped: a PreEnqueue plugin (SchedulingGates) holds them back.
	popped := sets.New[string]()
	for _, r := range results {
		popped.Insert(r.Pod)
	}
	for _, p := range pending {
		if popped.Has(podKey(p)) {
			continue
		}
		// The queue's runPreEnqueuePlugins is private: ask the profile's plugins in the same order.
		var st *fwk.Status
		for _, pl := range w.inner[p.Spec.SchedulerName].PreEnqueuePlugins() {
			if st = pl.PreEnqueue(ctx, p); !st.IsSuccess() {
				st.SetPlugin(pl.Name())
				break
			}
		}
		results = append(results, resultJSON{Pod: podKey(p), Code: st.Code().String(), Message: st.Message(), Gated: true,
			Best: []string{}, Feasible: []string{}, UnschedulablePlugins: []string{}, PendingPlugins: []string{}})
	}
	if len(w.late) > 0 {
		return results, errors.New("late failures: " + fmt.Sprint(w.late))
	}
	return results, nil
}

// popped starts the record of a cycle for the pod the queue popped (NextPod, or NextEntity from 1.37).
func (w *world) popped(info *framework.QueuedPodInfo) {
	if info != nil && info.Pod != nil {
		w.current = &cycle{pod: info.Pod, filtered: map[string]*fwk.Status{}}
	}
}

// scheduled records what SchedulePod decided for pod (its signature is per release: compat_*.go).
func (w *world) scheduled(ctx context.Context, pod *v1.Pod, res scheduler.ScheduleResult, err error) {
	c := w.current
	c.result, c.scheduled = res, err == nil
	var fitErr *framework.FitError
	if errors.As(err, &fitErr) {
		c.fitErr, c.messageBefore = fitErr, fitErr.Error() // PostFilterMsg is still empty here
	}
	// The snapshot is this cycle's and nothing is assumed yet: the second view sees the same world.
	c.full = w.fullView(ctx, pod.Spec.SchedulerName, pod)
}

// wrap puts the recorders around the queue's pop, SchedulePod and FailureHandler (exported fields of
// Scheduler; the first two are wrapped per release in compat_*.go).
func (w *world) wrap() {
	sched := w.sched
	w.wrapPop()
	w.wrapSchedulePod()
	failed := sched.FailureHandler
	sched.FailureHandler = func(ctx context.Context, f framework.Framework, info *framework.QueuedPodInfo, status *fwk.Status, nominating *fwk.NominatingInfo, start time.Time) {
		c := w.current
		if c != nil {
			c.mu.Lock()
		}
		switch {
		case c != nil && c.pod.UID == info.Pod.UID && c.binding && !c.bindFailed:
			c.bindFailed, c.bindMessage = true, status.Message()
		case c == nil || c.pod.UID != info.Pod.UID || c.failed:
			w.late = append(w.late, fmt.Sprintf("%s: %s", podKey(info.Pod), status.Message()))
		default:
			c.failed, c.failCode, c.failMessage = true, status.Code().String(), status.Message()
		}
		if c != nil {
			c.mu.Unlock()
		}
		// PostFilter's nomination is DefaultPreemption's (DynamicResources' PostFilter never
		// nominates): a new one (victims found) is reported; where ours differs (a tie upstream
		// breaks at random, or a real difference), the nominator gets ours, so both sides walk the
		// same world (a real difference also says "worldFixed"). A clearing Override ("":
		// preemption cannot help) and Noop go through as they are, as on our side.
		if c != nil && c.pod.UID == info.Pod.UID && c.postFiltered {
			if nominating.Mode() == fwk.ModeOverride && nominating.NominatedNodeName != "" {
				c.nominated = nominating.NominatedNodeName
			}
			if ours, ok := w.nominated[podKey(info.Pod)]; ok && ours != c.nominated {
				nominating = &fwk.NominatingInfo{NominatingMode: fwk.ModeOverride, NominatedNodeName: ours}
				c.nominationFixed = c.preemption == nil || !slices.Contains(c.preemption.Best, ours)
			} else if !ok && c.nominated != "" {
				nominating = &fwk.NominatingInfo{NominatingMode: fwk.ModeNoop}
				c.nominationFixed = true
			}
		}
		failed(ctx, f, info, status, nominating, start)
	}
}

// keepNominations swallows a status patch that only changes status.nominatedNodeName: preemption's
// clearing of the lower-priority pods nominated to its candidate node (prepareCandidate), which
// spread-scheduler, running no preemption, never does. The failure handler's own patch carries the
// PodScheduled condition too and goes through.
func (w *world) keepNominations(action clienttesting.Action) (bool, runtime.Object, error) {
	patch, ok := action.(clienttesting.PatchAction)
	if !ok || patch.GetSubresource() != "status" {
		return false, nil, nil
	}
	body := string(patch.GetPatch())
	if strings.Contains(body, string(v1.DisruptionTarget)) { // a victim's condition: it stays as it was
		obj, err := w.client.Tracker().Get(podsGVR, patch.GetNamespace(), patch.GetName())
		return true, obj, err
	}
	if !strings.Contains(body, "nominatedNodeName") || strings.Contains(body, "conditions") {
		return false, nil, nil
	}
	obj, err := w.client.Tracker().Get(podsGVR, patch.GetNamespace(), patch.GetName())
	return true, obj, err
}

// bind is the fake API's pods/binding: it sets spec.nodeName, as the API server does.
func (w *world) bind(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	binding, ok := action.(clienttesting.CreateAction).GetObject().(*v1.Binding)
	if !ok {
		return true, nil, fmt.Errorf("binding: unexpected %T", action.(clienttesting.CreateAction).GetObject())
	}
	return true, binding, w.setNode(binding.Namespace, binding.Name, binding.Target.Name)
}

func (w *world) setNode(namespace, name, node string) error {
	obj, err := w.client.Tracker().Get(podsGVR, namespace, name)
	if err != nil {
		return err
	}
	pod := obj.(*v1.Pod).DeepCopy()
	pod.Spec.NodeName = node
	return w.client.Tracker().Update(podsGVR, pod, namespace)
}

// cachedNode is where the scheduler's cache has the pod, "" when it has none, once not assumed.
func (w *world) cachedNode(pod *v1.Pod) (string, bool) {
	if assumed, _ := w.sched.Cache.IsAssumedPod(pod); assumed {
		return "", false
	}
	cached, err := w.sched.Cache.GetPod(pod)
	if err != nil {
		return "", true
	}
	return cached.Spec.NodeName, true
}

func settle(done func() bool) error {
	deadline := time.Now().Add(settleTimeout)
	for !done() {
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(50 * time.Microsecond)
	}
	return nil
}

// finish waits for the binding (if any) to be confirmed by the informer, moves the pod to where
// spread-scheduler put it when upstream differs, and turns the cycle into a result.
func (w *world) finish(ctx context.Context, c *cycle) (resultJSON, error) {
	pod := c.pod
	res := resultJSON{Pod: podKey(pod), Best: []string{}, Feasible: []string{}, Nodes: map[string]nodeJSON{},
		UnschedulablePlugins: []string{}, PendingPlugins: []string{}, Full: c.full, Problems: c.problems}
	placed := ""
	switch {
	case c.full == nil: // never reached SchedulePod (a pod being deleted is skipped)
		res.Code, res.Message = "Skip", fmt.Sprintf("skip schedule deleting pod: %s", podKey(pod))
		return res, nil
	case c.failed:
		res.Code, res.Message = c.failCode, c.failMessage
	case c.scheduled:
		res.Code = "Success"
		var node string
		if err := settle(func() bool { n, ok := w.cachedNode(pod); node = n; return ok }); err != nil {
			return res, fmt.Errorf("%s: binding never confirmed", podKey(pod))
		}
		res.Message = fmt.Sprintf("Successfully assigned %s to %s", podKey(pod), c.result.SuggestedHost)
		if node == "" {
			// The binding cycle failed: upstream forgot the pod, then hands FailureHandler the status.
			if err := settle(func() bool { c.mu.Lock(); defer c.mu.Unlock(); return c.bindFailed }); err != nil {
				return res, fmt.Errorf("%s: not bound, and no binding failure handled", podKey(pod))
			}
			res.Node, res.BindingError = c.result.SuggestedHost, c.bindMessage
			// What an earlier PreBind (VolumeBinding's) wrote stays written; reported here, not
			// with the next pod placed.
			res.VolumeWrites = w.takeWrites()
			break
		}
		if node != c.result.SuggestedHost {
			return res, fmt.Errorf("%s: bound to %q, SuggestedHost %q", podKey(pod), node, c.result.SuggestedHost)
		}
		placed = node
		res.VolumeWrites = w.takeWrites()
		claims, err := w.podClaims(pod)
		if err != nil {
			return res, fmt.Errorf("%s: %w", podKey(pod), err)
		}
		res.Claims = claims
	default:
		return res, fmt.Errorf("%s: the cycle neither failed nor scheduled", podKey(pod))
	}
	if res.BindingError == "" {
		res.Node = placed
	}
	res.MessageBeforePostFilter, res.PostFilterMessage, res.NominatedNode = c.messageBefore, c.postFilterMsg, c.nominated
	w.preemptionResult(ctx, c, &res)
	if c.fitErr != nil {
		res.UnschedulablePlugins = sortedSet(c.fitErr.Diagnosis.UnschedulablePlugins)
		res.PendingPlugins = sortedSet(c.fitErr.Diagnosis.PendingPlugins)
	}
	// Batching (schedule_one.go, findNodesThatFitPod): a hint that passes Filter is the only node
	// evaluated, and the cycle returns it without scoring.
	res.Hint = c.hint
	res.BatchMayHaveExpired = c.batchMayHaveExpired
	res.Batched = c.scheduled && c.hint != "" && c.hint == c.result.SuggestedHost &&
		len(c.filterCalls) == 1 && c.filterCalls[0] == c.hint && pod.Status.NominatedNodeName == ""
	w.realNodes(c, &res)

	if ours := w.ours(pod); ours != placed {
		if err := w.moveTo(pod, placed, ours); err != nil {
			return res, err
		}
		res.WorldFixed = true
	}
	res.WorldFixed = res.WorldFixed || c.nominationFixed
	return res, nil
}

// moveTo makes the pod's placement in the fake API (and so in the cache) node ("" = unbound). A
// bound pod never changes node (the cache would call itself corrupted): it is deleted and re-added.
func (w *world) moveTo(pod *v1.Pod, from, node string) error {
	obj, err := w.client.Tracker().Get(podsGVR, pod.Namespace, pod.Name)
	if err != nil {
		return fmt.Errorf("%s: %w", podKey(pod), err)
	}
	stored := obj.(*v1.Pod).DeepCopy()
	at := func(want string) error {
		if err := settle(func() bool { n, ok := w.cachedNode(pod); return ok && n == want }); err != nil {
			return fmt.Errorf("%s: the cache never saw it on %q", podKey(pod), want)
		}
		return nil
	}
	if from != "" {
		if err := w.client.Tracker().Delete(podsGVR, pod.Namespace, pod.Name); err != nil {
			return fmt.Errorf("%s: deleting: %w", podKey(pod), err)
		}
		if err := at(""); err != nil {
			return err
		}
		if node == "" {
			return nil
		}
		stored.Spec.NodeName = node
		if err := w.client.Tracker().Add(stored); err != nil {
			return fmt.Errorf("%s: re-adding on %q: %w", podKey(pod), node, err)
		}
		return at(node)
	}
	if err := w.setNode(pod.Namespace, pod.Name, node); err != nil {
		return fmt.Errorf("%s: binding to %q: %w", podKey(pod), node, err)
	}
	return at(node)
}

// realNodes fills the real cycle's per-node view: the FitError's statuses, or what Filter and Score
// returned; nodes the cycle never looked at are "evaluated": false.
func (w *world) realNodes(c *cycle, res *resultJSON) {
	f := w.inner[c.pod.Spec.SchedulerName]
	all, err := f.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		res.Problems = append(res.Problems, err.Error())
		return
	}
	res.NumAllNodes = len(all)
	res.EvaluatedNodes = c.result.EvaluatedNodes
	notEvaluated := false
	// The absent nodes' text lists PreFilter's plugins and, when the nominated node (or batching's
	// hint) was filtered first and rejected, its rejector: evaluateNominatedNode adds it to the same set
	// before findNodesThatFitPod prints it.
	absentPlugins := c.prePlugins
	nominated := c.pod.Status.NominatedNodeName
	if nominated == "" {
		nominated = c.hint
	}
	if first := c.filterCalls; nominated != "" && len(first) > 0 && first[0] == nominated {
		if st := c.filtered[nominated]; st.IsRejected() && st.Plugin() != "" {
			absentPlugins = absentPlugins.Clone().Insert(st.Plugin())
		}
	}
	for _, n := range all {
		name := n.Node().Name
		entry := nodeJSON{Scores: map[string]scoreJSON{}}
		if c.fitErr != nil {
			entry.Filter = status(c.fitErr.Diagnosis.NodeToStatus.Get(name))
		} else if st, ok := c.filtered[name]; ok {
			entry.Filter = status(st)
		} else if c.preRes != nil && !c.preRes.AllNodes() && !c.preRes.NodeNames.Has(name) {
			// What findNodesThatFitPod sets as the absent nodes' status (not returned on success).
			entry.Filter = status(fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
				fmt.Sprintf("node(s) didn't satisfy plugin(s) %v", sets.List(absentPlugins))))
		} else {
			entry.Evaluated = &notEvaluated
		}
		res.Nodes[name] = entry
	}
	if c.fitErr != nil {
		res.EvaluatedNodes = c.fitErr.Diagnosis.NodeToStatus.Len()
		return
	}
	if c.scores == nil {
		res.Best = []string{c.result.SuggestedHost}
		res.Feasible = []string{c.result.SuggestedHost}
		return
	}
	top := int64(-1 << 62)
	for _, s := range c.scores {
		top = max(top, s.TotalScore)
	}
	weights := w.weights(c.pod.Spec.SchedulerName)
	for _, s := range c.scores {
		entry := res.Nodes[s.Name]
		for _, ps := range s.Scores {
			weight := max(weights[ps.Name], 1)
			raw, ok := c.raw[s.Name][ps.Name]
			if !ok || raw.Normalized*weight != ps.Score {
				res.Problems = append(res.Problems, fmt.Sprintf("%s/%s: walk %+v, real weighted %d", s.Name, ps.Name, raw, ps.Score))
			}
			entry.Scores[ps.Name] = scoreJSON{Raw: raw.Raw, Normalized: ps.Score / weight}
		}
		total := s.TotalScore
		entry.Total = &total
		res.Nodes[s.Name] = entry
		res.Feasible = append(res.Feasible, s.Name)
		if s.TotalScore == top {
			res.Best = append(res.Best, s.Name)
		}
	}
	sort.Strings(res.Feasible)
	sort.Strings(res.Best)
}
