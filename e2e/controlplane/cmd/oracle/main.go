// Command oracle runs kube-scheduler itself, at the release of the go.mod it is built with (go.mod:
// v1.35.4; go.1.36.mod, go.1.37.mod: see e2e/build.py) (k8s.io/kubernetes imported as a library, never
// copied) on scenarios that spread-scheduler also decides, and prints JSON close to
// `spread-scheduler simulate --output json`, so a differential test can compare them field by field.
//
// Input: JSON lines on stdin, one scenario each (unchanged):
//
//	{"id": "...", "objects": [<Node|Pod|Service|ReplicaSet|StatefulSet|ReplicationController|
//	             DeviceClass|ResourceSlice|ResourceClaim|ResourceClaimTemplate|...>...],
//	 "config": <KubeSchedulerConfiguration v1>, "placements": {"ns/name": "node" | null},
//	 "rankings": {"ns/name": ["node", ...]},   (optional)
//	 "offsets": {"ns/name": 3}, "nominations": {"ns/name": "node"}}   (optional, preemption.go)
//
// Each scenario gets its own scheduler.New (real cache, snapshot, queue, profiles from "config",
// informers on a fake clientset holding "objects"), and the real ScheduleOne runs once per pod in the
// activeQ (world.go). Pending pods enter the queue one by one in creationTimestamp order (then input
// order) on a fake clock stepped 1ms per pod, so PrioritySort sees distinct arrival times; that clock
// never reaches a backoff expiry, so every pod gets exactly one attempt, as in `simulate`.
//
// "placements" are spread-scheduler's decisions. Both sides must walk the same sequence of worlds:
//   - ties: the Score step's NodePluginScores.Randomizer (upstream's own tie-breaker, otherwise 0
//     without extenders) is set to 1 on our node when it has the top total, so upstream's heap pops it;
//     with "rankings" (our scored nodes, ours first, the rest in the order our batching would offer
//     them), every ranked node gets a Randomizer by its rank, so the nodes upstream's heap keeps for
//     opportunistic batching come out among equal totals in our order too, and the feasible nodes
//     reach Score in that order (upstream's is its parallel Filter's finishing order), so the heap is
//     laid out as ours: 1.37 rescores a node into an entry with Randomizer 0, and among equal
//     Randomizers the heap's layout decides;
//   - anything else (a batched hint, a partial search, or a real difference): after the cycle, the
//     pod is moved to our node (or unbound, or bound there) through the fake API, and the result says
//     "worldFixed". Mismatches in later pods of that scenario may follow from the fix.
//
// PostFilter (DefaultPreemption) runs for real with spread-scheduler's random offset ("offsets"), and a
// second, deterministic view of its decision is reported ("preemption"; preemption.go says how). Its
// API deletes (and the victims' DisruptionTarget patches) are swallowed, so no victim leaves, as in
// `simulate`; the nomination it returns is reported ("nominatedNode") and the failure handler gets
// spread-scheduler's ("nominations"), so both nominators hold the same pods afterwards.
// Pending pods with status.nominatedNodeName are in upstream's nominator and count in Filter.
//
// Output: one JSON line per scenario, in the order they finish (-workers run at once):
//
//	{"id": ..., "error": "...", "results": [<result>...]}
//
// A result (fields added over the previous oracle are marked +; "nodes" entries gained filter.code
// and "evaluated"):
//
//	pod, code ("Success" | "Unschedulable" | "UnschedulableAndUnresolvable" | "Error"),
//	message                  the PodScheduled message upstream writes (after PostFilter),
//	+messageBeforePostFilter the FitError text before PostFilter appended " <postFilterMsg>",
//	+postFilterMessage, +nominatedNode   what DefaultPreemption said and nominated (then undone),
//	+node                    upstream's SuggestedHost (after the tie redirect), +worldFixed,
//	best                     the nodes with the top total in the real Score step (one feasible node: it),
//	+feasible, +evaluatedNodes, +numAllNodes,
//	+batched, +hint          the decision came from opportunistic batching's hint (batch.go) / the hint offered,
//	+gated                   never popped: PreEnqueue's status (listed after the popped pods),
//	+unschedulablePlugins, +pendingPlugins   from the real FitError's Diagnosis,
//	nodes                    the real cycle's view: per node filter {plugin, reason, code} or null,
//	                         scores {Plugin: {raw, normalized}}, total; "evaluated": false when the
//	                         real cycle never looked at the node (a hint, or enough feasible nodes found),
//	+preemption              DefaultPreemption's deterministic view (preemption.go): eligible, offset,
//	                         numCandidates, potentialNodes, candidates [{node, victims, pdbViolations,
//	                         criteria}], best (equal top), victims (of the real nominatedNode),
//	+full                    a second, unbatched every-node view on the same snapshot: {code, message,
//	                         best, feasible, nodes, unschedulablePlugins}; a node's Filter error ends
//	                         nothing there: every node's is kept, and the view is the first one's,
//	+problems                the oracle's self-checks that failed (real vs second view, raw vs real scores),
//	+volumeWrites            VolumeBinding's PreBind writes, in order: "bind PV <pv> -> <ns>/<claim>" (a
//	                         static PV's claimRef), "select node <ns>/<claim> -> <node>" (provisioning);
//	                         a stand-in PV controller and provisioner answer them at once (volumes.go),
//	+claims                  a placed pod's claims as DynamicResources' PreBind wrote them: per device
//	                         {claim, request, driver, pool, device}, then the claim it created for
//	                         the pod's DeviceClass-backed extended resources (claims.go).
//	+bindingError            the binding cycle's failure (PreBind, Bind) after the scheduling cycle
//	                         chose node (the pod is left unbound; code and message are the cycle's).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"sync"

	"github.com/go-logr/logr"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

type scenario struct {
	ID         string              `json:"id"`
	Objects    []json.RawMessage   `json:"objects"`
	Config     json.RawMessage     `json:"config"`
	Placements map[string]*string  `json:"placements"`
	Rankings   map[string][]string `json:"rankings,omitempty"`
	// Our DefaultPreemption's random offset and nomination, per pod that ran it (preemption.go).
	Offsets     map[string]int32  `json:"offsets,omitempty"`
	Nominations map[string]string `json:"nominations,omitempty"`
}

type filterJSON struct {
	Plugin string `json:"plugin"`
	Reason string `json:"reason"`
	Code   string `json:"code"`
}

type scoreJSON struct {
	Raw        int64 `json:"raw"`
	Normalized int64 `json:"normalized"`
}

type nodeJSON struct {
	Filter    *filterJSON          `json:"filter"`
	Scores    map[string]scoreJSON `json:"scores"`
	Total     *int64               `json:"total"`
	Evaluated *bool                `json:"evaluated,omitempty"`
}

// viewJSON is one complete evaluation of a pod: every node filtered, every feasible node scored.
type viewJSON struct {
	Code                 string              `json:"code"`
	Message              string              `json:"message,omitempty"`
	Best                 []string            `json:"best"`
	Feasible             []string            `json:"feasible"`
	UnschedulablePlugins []string            `json:"unschedulablePlugins"`
	Nodes                map[string]nodeJSON `json:"nodes"`
}

type resultJSON struct {
	Pod                     string              `json:"pod"`
	Code                    string              `json:"code"`
	Message                 string              `json:"message"`
	MessageBeforePostFilter string              `json:"messageBeforePostFilter,omitempty"`
	PostFilterMessage       string              `json:"postFilterMessage,omitempty"`
	NominatedNode           string              `json:"nominatedNode,omitempty"`
	Node                    string              `json:"node,omitempty"`
	WorldFixed              bool                `json:"worldFixed,omitempty"`
	Best                    []string            `json:"best"`
	Feasible                []string            `json:"feasible"`
	EvaluatedNodes          int                 `json:"evaluatedNodes"`
	NumAllNodes             int                 `json:"numAllNodes"`
	Batched                 bool                `json:"batched"`
	Gated                   bool                `json:"gated,omitempty"`
	Hint                    string              `json:"hint,omitempty"`
	BatchMayHaveExpired     bool                `json:"batchMayHaveExpired,omitempty"` // + (world.go)
	UnschedulablePlugins    []string            `json:"unschedulablePlugins"`
	PendingPlugins          []string            `json:"pendingPlugins"`
	Nodes                   map[string]nodeJSON `json:"nodes"`
	Full                    *viewJSON           `json:"full,omitempty"`
	Preemption              *preemptionJSON     `json:"preemption,omitempty"`
	Problems                []string            `json:"problems,omitempty"`
	VolumeWrites            []string            `json:"volumeWrites,omitempty"`
	Claims                  []claimJSON         `json:"claims,omitempty"` // + (claims.go)
	BindingError            string              `json:"bindingError,omitempty"`
}

type outputJSON struct {
	ID      string       `json:"id"`
	Error   string       `json:"error,omitempty"`
	Results []resultJSON `json:"results"`
}

func main() {
	metrics.Register() // the framework records plugin metrics; they must exist
	klog.InitFlags(nil)
	workers := flag.Int("workers", 2*goruntime.NumCPU(), "scenarios decided at once")
	logs := flag.Bool("log", false, "keep the scheduler's klog output (stderr); without it, it is dropped")
	gates := flag.String("feature-gates", "", "kube-scheduler's --feature-gates (Gate=true,...), at this build's release")
	flag.Parse()
	if err := utilfeature.DefaultMutableFeatureGate.Set(*gates); err != nil {
		fmt.Fprintf(os.Stderr, "oracle: -feature-gates: %v\n", err)
		os.Exit(2)
	}
	if !*logs {
		// The real cycle logs every plugin error it meets (a PreScore error is an expected outcome here).
		klog.SetLogger(logr.Discard())
	}
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
