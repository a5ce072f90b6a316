// Command nullbinder is the end-to-end benchmark's third contestant: a "scheduler" that decides
// nothing. It watches the pending pods of one schedulerName, and for each POSTs a Binding to the next
// Ready, schedulable node in round-robin order and records the same Scheduled event kube-scheduler
// records, through one client with the same QPS/burst token bucket. What it costs is the least any
// scheduler must spend against this API server; bench/e2e.py reports ours against it.
//
//	nullbinder -kubeconfig K -scheduler-name spread-scheduler -qps 5000 -burst 5000
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"sync"
	"syscall"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// bindWorkers bounds the Bindings in flight; the client's token bucket sets the rate.
const bindWorkers = 16

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	schedulerName := flag.String("scheduler-name", "spread-scheduler", "bind the pending pods that name this scheduler")
	qps := flag.Float64("qps", 50, "client QPS (clientConnection.qps)")
	burst := flag.Int("burst", 100, "client burst (clientConnection.burst)")
	flag.Parse()
	if err := run(*kubeconfig, *schedulerName, float32(*qps), *burst); err != nil {
		fmt.Fprintln(os.Stderr, "nullbinder:", err)
		os.Exit(1)
	}
}

// readyNodes keeps the names of Ready, schedulable nodes, sorted, and hands them out in turn.
type readyNodes struct {
	mu    sync.Mutex
	names map[string]bool
	order []string
	next  int
}

func (r *readyNodes) set(node *v1.Node) {
	ready := !node.Spec.Unschedulable
	if ready {
		ready = false
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
				ready = true
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.names[node.Name] == ready {
		return
	}
	if ready {
		r.names[node.Name] = true
	} else {
		delete(r.names, node.Name)
	}
	r.order = r.order[:0]
	for name := range r.names {
		r.order = append(r.order, name)
	}
	sort.Strings(r.order)
}

func (r *readyNodes) pick() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.order) == 0 {
		return "", false
	}
	name := r.order[r.next%len(r.order)]
	r.next++
	return name, true
}

func run(kubeconfig, schedulerName string, qps float32, burst int) error {
	klog.SetLogger(klog.Background().V(10)) // quiet
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cfg.QPS, cfg.Burst = qps, burst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	nodes := &readyNodes{names: map[string]bool{}}
	factory := informers.NewSharedInformerFactory(client, 0)
	pending := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(
		func(o *metav1.ListOptions) {
			o.FieldSelector = fields.AndSelectors(
				fields.OneTermEqualSelector("spec.schedulerName", schedulerName),
				fields.OneTermEqualSelector("spec.nodeName", ""),
			).String()
		}))
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[*v1.Pod]())
	_, err = factory.Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { nodes.set(obj.(*v1.Node)) },
		UpdateFunc: func(_, obj any) { nodes.set(obj.(*v1.Node)) },
		DeleteFunc: func(obj any) {
			if n, ok := obj.(*v1.Node); ok {
				nodes.set(&v1.Node{ObjectMeta: n.ObjectMeta, Spec: v1.NodeSpec{Unschedulable: true}})
			}
		},
	})
	if err != nil {
		return err
	}
	_, err = pending.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod := obj.(*v1.Pod); pod.DeletionTimestamp == nil {
				queue.Add(pod)
			}
		},
	})
	if err != nil {
		return err
	}
	broadcaster := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	broadcaster.StartRecordingToSink(ctx.Done())
	recorder := broadcaster.NewRecorder(scheme.Scheme, schedulerName)
	factory.Start(ctx.Done())
	pending.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	pending.WaitForCacheSync(ctx.Done())
	fmt.Println("nullbinder: caches synced") // bench/e2e.py starts its clock after this line
	var wg sync.WaitGroup
	for range bindWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for bindNext(ctx, client, queue, nodes, recorder) {
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
	broadcaster.Shutdown()
	return nil
}

// bindNext binds one queued pod to the next Ready node; false once the queue is shut down.
func bindNext(ctx context.Context, client kubernetes.Interface, queue workqueue.TypedRateLimitingInterface[*v1.Pod],
	nodes *readyNodes, recorder events.EventRecorder) bool {
	pod, shutdown := queue.Get()
	if shutdown {
		return false
	}
	defer queue.Done(pod)
	node, ok := nodes.pick()
	if !ok {
		queue.AddRateLimited(pod)
		return true
	}
	binding := &v1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     v1.ObjectReference{Kind: "Node", Name: node},
	}
	if err := client.CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		if ctx.Err() == nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			queue.AddRateLimited(pod)
		}
		return true
	}
	queue.Forget(pod)
	recorder.Eventf(pod, nil, v1.EventTypeNormal, "Scheduled", "Binding", "Successfully assigned %v/%v to %v",
		pod.Namespace, pod.Name, node)
	return true
}
