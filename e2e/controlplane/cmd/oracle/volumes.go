package main

// The PV controller and provisioner that upstream's VolumeBinding PreBind waits for: with no one to
// answer its writes, BindPodVolumes would poll until bindTimeoutSeconds and fail every pod whose
// claims wait for their first consumer. They answer at once, as `spread-scheduler simulate` does
// (MemoryVolumeBinder): a PV given a claimRef is bound and so is its claim; a claim given the
// selected-node annotation gets a PV on that node's hostname label and is bound to it.
//
// The assume caches of PVs and claims order versions by resourceVersion, which the fake tracker
// never sets: storage objects are loaded at "1" and every write here takes the next number.

import (
	"fmt"
	"sort"
	"strconv"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

var (
	pvsGVR    = v1.SchemeGroupVersion.WithResource("persistentvolumes")
	claimsGVR = v1.SchemeGroupVersion.WithResource("persistentvolumeclaims")
	nodesGVR  = v1.SchemeGroupVersion.WithResource("nodes")
)

const (
	annSelectedNode  = "volume.kubernetes.io/selected-node"
	annBindCompleted = "pv.kubernetes.io/bind-completed"
	hostnameLabel    = "kubernetes.io/hostname"
)

// versions numbers the fake API's writes of storage objects.
type versions struct{ last atomic.Int64 }

func (v *versions) next() string { return strconv.FormatInt(v.last.Add(1), 10) }

// versionStorage gives a PV or claim without a resourceVersion the first one.
func versionStorage(obj runtime.Object) {
	switch obj.(type) {
	case *v1.PersistentVolume, *v1.PersistentVolumeClaim:
		if meta := obj.(metav1.Object); meta.GetResourceVersion() == "" {
			meta.SetResourceVersion("1")
		}
	}
}

// bindVolume is the PV controller's answer to PreBind's PUT of a PV's claimRef: the PV and its
// claim end bound to each other.
func (w *world) bindVolume(action clienttesting.Action) (bool, runtime.Object, error) {
	pv, ok := action.(clienttesting.UpdateAction).GetObject().(*v1.PersistentVolume)
	if !ok || action.GetSubresource() != "" || pv.Spec.ClaimRef == nil {
		return false, nil, nil
	}
	pv = pv.DeepCopy()
	w.wrote(fmt.Sprintf("bind PV %s -> %s/%s", pv.Name, pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name))
	pv.ResourceVersion = w.versions.next()
	pv.Status.Phase = v1.VolumeBound
	if err := w.client.Tracker().Update(pvsGVR, pv, ""); err != nil {
		return true, nil, err
	}
	return true, pv, w.bindClaim(pv.Spec.ClaimRef.Namespace, pv.Spec.ClaimRef.Name, pv.Name)
}

// provision is a provisioner's answer to PreBind's PUT of the selected-node annotation: a PV of
// the claim's size, class and access modes on the node's hostname label (any node when it has
// none), bound to the claim.
func (w *world) provision(action clienttesting.Action) (bool, runtime.Object, error) {
	claim, ok := action.(clienttesting.UpdateAction).GetObject().(*v1.PersistentVolumeClaim)
	if !ok || action.GetSubresource() != "" {
		return false, nil, nil
	}
	node, ok := claim.Annotations[annSelectedNode]
	if !ok || claim.Spec.VolumeName != "" {
		return false, nil, nil
	}
	claim = claim.DeepCopy()
	w.wrote(fmt.Sprintf("select node %s/%s -> %s", claim.Namespace, claim.Name, node))
	claim.ResourceVersion = w.versions.next()
	if err := w.client.Tracker().Update(claimsGVR, claim, claim.Namespace); err != nil {
		return true, nil, err
	}
	id := string(claim.UID)
	if id == "" {
		id = claim.Namespace + "-" + claim.Name
	}
	modes := sortedModes(claim.Spec.AccessModes)
	size := claim.Spec.Resources.Requests[v1.ResourceStorage]
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-" + id, ResourceVersion: w.versions.next()},
		Spec: v1.PersistentVolumeSpec{
			Capacity:    v1.ResourceList{v1.ResourceStorage: size},
			AccessModes: modes,
			ClaimRef:    &v1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound},
	}
	if claim.Spec.StorageClassName != nil {
		pv.Spec.StorageClassName = *claim.Spec.StorageClassName
	}
	if obj, err := w.client.Tracker().Get(nodesGVR, "", node); err == nil {
		if host, ok := obj.(*v1.Node).Labels[hostnameLabel]; ok {
			pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: hostnameLabel, Operator: v1.NodeSelectorOpIn, Values: []string{host}}},
			}}}}
		}
	}
	if err := w.client.Tracker().Add(pv); err != nil {
		return true, nil, fmt.Errorf("provisioning %s: %w", pv.Name, err)
	}
	return true, claim, w.bindClaim(claim.Namespace, claim.Name, pv.Name)
}

// bindClaim completes a claim's binding to a PV, as the PV controller's syncClaim does.
func (w *world) bindClaim(namespace, name, volume string) error {
	obj, err := w.client.Tracker().Get(claimsGVR, namespace, name)
	if err != nil {
		return fmt.Errorf("binding claim %s/%s: %w", namespace, name, err)
	}
	claim := obj.(*v1.PersistentVolumeClaim).DeepCopy()
	claim.Spec.VolumeName = volume
	metav1.SetMetaDataAnnotation(&claim.ObjectMeta, annBindCompleted, "yes")
	claim.Status.Phase = v1.ClaimBound
	claim.ResourceVersion = w.versions.next()
	return w.client.Tracker().Update(claimsGVR, claim, namespace)
}

func sortedModes(modes []v1.PersistentVolumeAccessMode) []v1.PersistentVolumeAccessMode {
	out := append([]v1.PersistentVolumeAccessMode(nil), modes...)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// wrote records one of PreBind's writes for the cycle's result (finish takes them).
func (w *world) wrote(what string) {
	w.writesMu.Lock()
	defer w.writesMu.Unlock()
	w.writes = append(w.writes, what)
}

func (w *world) takeWrites() []string {
	w.writesMu.Lock()
	defer w.writesMu.Unlock()
	out := w.writes
	w.writes = nil
	return out
}
