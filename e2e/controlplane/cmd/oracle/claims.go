package main

// DynamicResources' claims in the fake API. Upstream's PreBind writes each claim it allocated (the
// finalizer by Update, then status.allocation and status.reservedFor by UpdateStatus) and assumes
// what the API returned into its claim assume cache, which orders versions by resourceVersion: the
// fake tracker never sets one, so claims are loaded at "1" and every claim write takes the next
// number (as volumes.go does for PVs), refusing a write from a stale copy as the API server does. After a pod is bound, its claims as the fake API holds them
// say which device serves which request ("claims" in the result, compared device by device).

import (
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
)

var (
	resourceClaimsGVR = resourceapi.SchemeGroupVersion.WithResource("resourceclaims")
	resourceClaimsGVK = resourceapi.SchemeGroupVersion.WithKind("ResourceClaim")
)

// claimJSON is one device allocated to one of a placed pod's claims (simulate's "claims" entries).
type claimJSON struct {
	Claim   string `json:"claim"`
	Request string `json:"request"`
	Driver  string `json:"driver"`
	Pool    string `json:"pool"`
	Device  string `json:"device"`
}

// versionClaim gives a ResourceClaim without a resourceVersion the first one.
func versionClaim(obj runtime.Object) {
	if claim, ok := obj.(*resourceapi.ResourceClaim); ok && claim.ResourceVersion == "" {
		claim.ResourceVersion = "1"
	}
}

// writeClaim is the fake API's claim update (spec or status): stored with the next resourceVersion.
func (w *world) writeClaim(action clienttesting.Action) (bool, runtime.Object, error) {
	update, ok := action.(clienttesting.UpdateAction)
	if !ok {
		return false, nil, nil
	}
	claim, ok := update.GetObject().(*resourceapi.ResourceClaim)
	if !ok {
		return false, nil, nil
	}
	// Optimistic concurrency, as the API server has it: a write from a stale copy (PreBind writing a
	// claim the pod names twice from the copy it read before the first write) is a conflict, which
	// upstream's bindClaim answers by reading the claim again.
	stored, err := w.client.Tracker().Get(resourceClaimsGVR, claim.Namespace, claim.Name)
	if err != nil {
		return true, nil, err
	}
	if current := stored.(*resourceapi.ResourceClaim).ResourceVersion; claim.ResourceVersion != "" && claim.ResourceVersion != current {
		return true, nil, apierrors.NewConflict(resourceClaimsGVR.GroupResource(), claim.Name,
			fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	claim = claim.DeepCopy()
	claim.ResourceVersion = w.versions.next()
	if err := w.client.Tracker().Update(resourceClaimsGVR, claim, claim.Namespace); err != nil {
		return true, nil, err
	}
	return true, claim, nil
}

// patchClaim is the fake API's strategic-merge patch of a claim (upstream's Unreserve removes the pod
// from status.reservedFor so): applied and stored with the next resourceVersion. The default reactor
// would keep the old version, and the claim assume cache drops an informer update whose version is
// not newer, so upstream would go on seeing the reservation the API no longer holds. The patch's
// metadata.uid is a precondition, as on the API server.
func (w *world) patchClaim(action clienttesting.Action) (bool, runtime.Object, error) {
	patch, ok := action.(clienttesting.PatchAction)
	if !ok || patch.GetPatchType() != types.StrategicMergePatchType {
		return false, nil, nil
	}
	stored, err := w.client.Tracker().Get(resourceClaimsGVR, patch.GetNamespace(), patch.GetName())
	if err != nil {
		return true, nil, err
	}
	claim := stored.(*resourceapi.ResourceClaim)
	var precondition struct {
		Metadata struct {
			UID types.UID `json:"uid"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(patch.GetPatch(), &precondition); err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	if uid := precondition.Metadata.UID; uid != "" && uid != claim.UID {
		return true, nil, apierrors.NewConflict(resourceClaimsGVR.GroupResource(), claim.Name,
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", uid, claim.UID))
	}
	old, err := json.Marshal(claim)
	if err != nil {
		return true, nil, err
	}
	merged, err := strategicpatch.StrategicMergePatch(old, patch.GetPatch(), &resourceapi.ResourceClaim{})
	if err != nil {
		return true, nil, apierrors.NewBadRequest(err.Error())
	}
	updated := &resourceapi.ResourceClaim{}
	if err := json.Unmarshal(merged, updated); err != nil {
		return true, nil, err
	}
	updated.ResourceVersion = w.versions.next()
	if err := w.client.Tracker().Update(resourceClaimsGVR, updated, updated.Namespace); err != nil {
		return true, nil, err
	}
	return true, updated, nil
}

// createClaim names a claim created with generateName (upstream's PreBind creates the claim for a
// pod's DeviceClass-backed extended resources so; the fake tracker would store it without a name)
// as simulate's writer does: the prefix and a five-digit count of such creates. The default
// reactor then stores it.
func (w *world) createClaim(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok {
		return false, nil, nil
	}
	claim, ok := create.GetObject().(*resourceapi.ResourceClaim)
	if !ok || claim.Name != "" || claim.GenerateName == "" {
		return false, nil, nil
	}
	w.generated++
	claim.Name = fmt.Sprintf("%s%05d", claim.GenerateName, w.generated)
	claim.UID = types.UID(fmt.Sprintf("oracle-claim-%d", w.generated))
	claim.ResourceVersion = w.versions.next()
	return false, nil, nil
}

// podClaims is each device allocated to a claim of pod (in spec.resourceClaims order) that is
// reserved for it, as the fake API holds them now.
func (w *world) podClaims(pod *v1.Pod) ([]claimJSON, error) {
	obj, err := w.client.Tracker().Get(podsGVR, pod.Namespace, pod.Name)
	if err != nil {
		return nil, err
	}
	stored := obj.(*v1.Pod)
	var out []claimJSON
	var names []string
	for _, ref := range stored.Spec.ResourceClaims {
		name := ""
		if ref.ResourceClaimName != nil {
			name = *ref.ResourceClaimName
		} else {
			for _, st := range stored.Status.ResourceClaimStatuses {
				if st.Name == ref.Name && st.ResourceClaimName != nil {
					name = *st.ResourceClaimName
				}
			}
		}
		names = append(names, name)
	}
	// Then the claim of the pod's DeviceClass-backed extended resources, which PreBind created.
	if st := stored.Status.ExtendedResourceClaimStatus; st != nil {
		names = append(names, st.ResourceClaimName)
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		got, err := w.client.Tracker().Get(resourceClaimsGVR, pod.Namespace, name)
		if err != nil {
			return nil, fmt.Errorf("claim %s/%s: %w", pod.Namespace, name, err)
		}
		claim := got.(*resourceapi.ResourceClaim)
		reserved := false
		for _, r := range claim.Status.ReservedFor {
			reserved = reserved || r.UID == stored.UID
		}
		if claim.Status.Allocation == nil || !reserved {
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			out = append(out, claimJSON{Claim: claim.Namespace + "/" + claim.Name, Request: r.Request,
				Driver: r.Driver, Pool: r.Pool, Device: r.Device})
		}
	}
	return out, nil
}

// settleClaims waits until DynamicResources' claim assume cache holds every ResourceClaim of the fake
// API at the version stored there (and none the API deleted), then drains the cache's event queue,
// so the devices its allocated-devices tracker counts are the API's when the next cycle begins.
// Between pods the world is settled, as simulate's is: what a lagging informer has not yet brought
// is the machine's load, not a decision. The race this closes (seed 635789 at 1.37, seen only under
// load): PreBind assumes the claim it wrote; the informer then brings that same version, which the
// assume cache skips (not newer), so its API copy stays the one before the write; the binding fails
// and Unreserve's AssumedClaimRestore rolls the claim back to that copy, unallocated. Its devices
// look free until the informer brings Unreserve's own patch of the claim, and a next cycle that
// starts first can allocate them.
func (w *world) settleClaims() error {
	var claims fwk.ResourceClaimTracker
	for _, f := range w.inner {
		if m := f.SharedDRAManager(); m != nil {
			claims = m.ResourceClaims()
			break
		}
	}
	if claims == nil {
		return nil
	}
	list, err := w.client.Tracker().List(resourceClaimsGVR, resourceClaimsGVK, "")
	if err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	want := make(map[string]string, len(items))
	for _, item := range items {
		claim := item.(*resourceapi.ResourceClaim)
		want[claim.Namespace+"/"+claim.Name] = claim.ResourceVersion
	}
	if err := settle(func() bool {
		held, err := claims.List()
		if err != nil || len(held) != len(want) {
			return false
		}
		for _, claim := range held {
			if want[claim.Namespace+"/"+claim.Name] != claim.ResourceVersion {
				return false
			}
		}
		return true
	}); err != nil {
		return fmt.Errorf("the claim assume cache never reached the fake API's claims: %w", err)
	}
	// Restore of a key the cache does not hold changes nothing and returns only after the cache's
	// queued events reached its handlers (emitEvents): a barrier for the allocated-devices tracker.
	claims.AssumedClaimRestore("", "oracle-settle-barrier")
	return nil
}

// delayedWatch is the fake API's watch of claims with every event held back by delay, as a loaded
// machine holds back the informer (ORACLE_CLAIM_WATCH_DELAY, for the test that shows settleClaims
// is needed). Events keep their order; the tracker's own channel is drained at once.
func (w *world) delayedWatch(delay time.Duration) clienttesting.WatchReactionFunc {
	return func(action clienttesting.Action) (bool, watch.Interface, error) {
		inner, err := w.client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		type held struct {
			event watch.Event
			due   time.Time
		}
		queue := make(chan held, 1<<16)
		out := make(chan watch.Event)
		proxy := watch.NewProxyWatcher(out)
		go func() {
			defer close(queue)
			for event := range inner.ResultChan() {
				queue <- held{event, time.Now().Add(delay)}
			}
		}()
		go func() {
			defer inner.Stop()
			for h := range queue {
				time.Sleep(time.Until(h.due))
				select {
				case out <- h.event:
				case <-proxy.StopChan():
					return
				}
			}
		}()
		return true, proxy, nil
	}
}
