// Command fake-kubelet stands in for the kubelet in Artel's Kubernetes tests:
// no real kubelet (and no container) ever runs there. It
//
//   - creates the Node objects of --nodes (capacity and allocatable as given,
//     pods=110 unless given, condition Ready=True) when they are missing, and
//     keeps them Ready (a heartbeat of the Ready condition every --heartbeat);
//   - watches the pods bound to those nodes (spec.nodeName) and sets each one
//     Running (conditions Ready/ContainersReady/Initialized, a pod IP, running
//     container statuses); after the seconds in the annotation
//     artel.dev/fake-run-seconds it sets the pod Succeeded, or Failed when the
//     annotation artel.dev/fake-exit-code is non-zero; without the annotation
//     it runs until it is deleted. restartPolicy is not honoured: a finished
//     pod stays finished;
//   - deletes terminating pods (deletionTimestamp set) with grace period 0,
//     as a kubelet does once the containers are gone.
//
// --nodes is "name:res=qty,res=qty;name2:..." (e.g.
// "node-a:cpu=64,memory=512Gi,nvidia.com/gpu=8") or the path of a YAML file:
//
//	nodes:
//	- name: node-a
//	  labels: {zone: a}
//	  capacity: {cpu: "64", memory: 512Gi, nvidia.com/gpu: "8"}
//
// Test tooling only (tools/k8s/build.sh builds it; scripts/k8s-up.sh
// --fake-kubelet starts it). See docs/kubernetes.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/yaml"
)

const (
	annRunSeconds = "artel.dev/fake-run-seconds"
	annExitCode   = "artel.dev/fake-exit-code"
)

type nodeSpec struct {
	Name     string            `json:"name"`
	Labels   map[string]string `json:"labels,omitempty"`
	Capacity map[string]string `json:"capacity"`
	// Taints are set when the node is created (a real node's are set by its
	// kubelet's --register-with-taints).
	Taints []corev1.Taint `json:"taints,omitempty"`
}

type nodesFile struct {
	Nodes []nodeSpec `json:"nodes"`
}

func parseNodes(spec string) ([]nodeSpec, error) {
	if st, err := os.Stat(spec); err == nil && !st.IsDir() {
		data, err := os.ReadFile(spec)
		if err != nil {
			return nil, err
		}
		var f nodesFile
		if err := yaml.UnmarshalStrict(data, &f); err != nil {
			return nil, fmt.Errorf("%s: %v (expected nodes: [{name, labels, capacity, taints}])", spec, err)
		}
		for i, n := range f.Nodes {
			if n.Name == "" {
				return nil, fmt.Errorf("%s: nodes[%d].name is empty", spec, i)
			}
		}
		return f.Nodes, nil
	}
	var out []nodeSpec
	for i, part := range strings.Split(spec, ";") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, res, _ := strings.Cut(part, ":")
		name = strings.TrimSpace(name)
		if name == "" {
			return nil, fmt.Errorf("--nodes entry %d (%q): no node name before ':'", i+1, part)
		}
		n := nodeSpec{Name: name, Capacity: map[string]string{}}
		for _, kv := range strings.Split(res, ",") {
			kv = strings.TrimSpace(kv)
			if kv == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("--nodes entry %d (%q): %q is not resource=quantity", i+1, part, kv)
			}
			n.Capacity[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--nodes %q names no node", spec)
	}
	return out, nil
}

func resourceList(capacity map[string]string) (corev1.ResourceList, error) {
	rl := corev1.ResourceList{}
	for k, v := range capacity {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("resource %s: quantity %q: %v", k, v, err)
		}
		rl[corev1.ResourceName(k)] = q
	}
	if _, ok := rl[corev1.ResourcePods]; !ok {
		rl[corev1.ResourcePods] = resource.MustParse("110")
	}
	return rl, nil
}

type kubelet struct {
	client    kubernetes.Interface
	nodes     map[string]nodeSpec
	queue     workqueue.TypedRateLimitingInterface[types.NamespacedName]
	podLister cache.Indexer
	ipCounter atomic.Uint32
	mu        sync.Mutex
	podIPs    map[types.UID]string
}

func readyCondition(now metav1.Time) corev1.NodeCondition {
	return corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message:           "fake-kubelet is posting ready status (no real kubelet runs in Artel's tests)",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}
}

func (k *kubelet) ensureNode(ctx context.Context, n nodeSpec) error {
	rl, err := resourceList(n.Capacity)
	if err != nil {
		return fmt.Errorf("node %s: %v", n.Name, err)
	}
	now := metav1.Now()
	existing, err := k.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		labels := map[string]string{"kubernetes.io/hostname": n.Name, "kubernetes.io/os": "linux", "type": "fake-kubelet"}
		for lk, lv := range n.Labels {
			labels[lk] = lv
		}
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: labels},
			Spec:       corev1.NodeSpec{Taints: n.Taints},
			Status: corev1.NodeStatus{
				Capacity: rl, Allocatable: rl,
				Conditions: []corev1.NodeCondition{readyCondition(now)},
				Addresses:  []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: n.Name}},
				NodeInfo:   corev1.NodeSystemInfo{KubeletVersion: "fake", OperatingSystem: "linux", Architecture: "amd64"},
				Phase:      corev1.NodeRunning,
			},
		}
		created, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create node %s: %v", n.Name, err)
		}
		if err == nil {
			existing = created
			// Status may or may not be kept on create; the status write below makes sure.
		} else {
			existing, err = k.client.CoreV1().Nodes().Get(ctx, n.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
		}
		fmt.Fprintf(os.Stderr, "fake-kubelet: node %s registered\n", n.Name)
	} else if err != nil {
		return fmt.Errorf("get node %s: %v", n.Name, err)
	}
	// The API server's TaintNodesByCondition admission taints a new node
	// not-ready; the node lifecycle controller (which tests do not run) would
	// lift it once the node is Ready. The fake kubelet lifts it itself.
	var kept []corev1.Taint
	for _, t := range existing.Spec.Taints {
		if t.Key != corev1.TaintNodeNotReady && t.Key != corev1.TaintNodeUnreachable {
			kept = append(kept, t)
		}
	}
	if len(kept) != len(existing.Spec.Taints) {
		n2 := existing.DeepCopy()
		n2.Spec.Taints = kept
		updated, err := k.client.CoreV1().Nodes().Update(ctx, n2, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("untaint node %s: %v", n.Name, err)
		}
		existing = updated
	}
	// Heartbeat: keep Ready=True (transition time kept when it already was).
	node := existing.DeepCopy()
	cond := readyCondition(now)
	found := false
	for i := range node.Status.Conditions {
		c := &node.Status.Conditions[i]
		if c.Type != corev1.NodeReady {
			continue
		}
		found = true
		if c.Status == corev1.ConditionTrue {
			cond.LastTransitionTime = c.LastTransitionTime
		}
		*c = cond
	}
	if !found {
		node.Status.Conditions = append(node.Status.Conditions, cond)
	}
	if len(node.Status.Capacity) == 0 {
		node.Status.Capacity, node.Status.Allocatable = rl, rl
	}
	if len(node.Status.Addresses) == 0 {
		node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}, {Type: corev1.NodeHostName, Address: n.Name}}
	}
	_, err = k.client.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("update node %s status: %v", n.Name, err)
	}
	return nil
}

func (k *kubelet) podIP(uid types.UID) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ip, ok := k.podIPs[uid]; ok {
		return ip
	}
	n := k.ipCounter.Add(1)
	ip := fmt.Sprintf("10.244.%d.%d", (n/250)%250, n%250+2)
	k.podIPs[uid] = ip
	return ip
}

func setPodCondition(pod *corev1.Pod, t corev1.PodConditionType, s corev1.ConditionStatus, reason string, now metav1.Time) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type == t {
			if c.Status != s {
				c.LastTransitionTime = now
			}
			c.Status, c.Reason = s, reason
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: now})
}

// sync brings one pod one step forward; returns how long until it needs another look (0 = never).
func (k *kubelet) sync(ctx context.Context, key types.NamespacedName) (time.Duration, error) {
	obj, exists, err := k.podLister.GetByKey(key.Namespace + "/" + key.Name)
	if err != nil || !exists {
		return 0, err
	}
	pod := obj.(*corev1.Pod)
	if _, ours := k.nodes[pod.Spec.NodeName]; !ours {
		return 0, nil
	}
	if pod.DeletionTimestamp != nil {
		zero := int64(0)
		uid := pod.UID
		err := k.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return 0, err
		}
		k.mu.Lock()
		delete(k.podIPs, pod.UID)
		k.mu.Unlock()
		return 0, nil
	}
	now := metav1.Now()
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return 0, nil
	case corev1.PodRunning:
		runFor, ok := pod.Annotations[annRunSeconds]
		if !ok {
			return 0, nil
		}
		secs, err := strconv.ParseFloat(strings.TrimSpace(runFor), 64)
		if err != nil || secs < 0 {
			fmt.Fprintf(os.Stderr, "fake-kubelet: pod %s: annotation %s=%q is not a number of seconds; it runs until deleted\n", key, annRunSeconds, runFor)
			return 0, nil
		}
		started := pod.Status.StartTime
		if started == nil {
			started = &now
		}
		end := started.Add(time.Duration(secs * float64(time.Second)))
		if wait := time.Until(end); wait > 0 {
			return wait, nil
		}
		exit := int32(0)
		if v, ok := pod.Annotations[annExitCode]; ok {
			c, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				fmt.Fprintf(os.Stderr, "fake-kubelet: pod %s: annotation %s=%q is not an integer; exit code 1\n", key, annExitCode, v)
				c = 1
			}
			exit = int32(c)
		}
		p := pod.DeepCopy()
		reason := "Completed"
		p.Status.Phase = corev1.PodSucceeded
		if exit != 0 {
			reason = "Error"
			p.Status.Phase = corev1.PodFailed
		}
		for i := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[i]
			startedAt := now
			if cs.State.Running != nil {
				startedAt = cs.State.Running.StartedAt
			}
			cs.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exit, Reason: reason, StartedAt: startedAt, FinishedAt: now, ContainerID: cs.ContainerID}}
			cs.Ready = false
			f := false
			cs.Started = &f
		}
		setPodCondition(p, corev1.PodReady, corev1.ConditionFalse, "PodCompleted", now)
		setPodCondition(p, corev1.ContainersReady, corev1.ConditionFalse, "PodCompleted", now)
		_, err = k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
		return 0, nil
	default: // Pending (or unknown): start it.
		p := pod.DeepCopy()
		p.Status.Phase = corev1.PodRunning
		p.Status.HostIP = "127.0.0.1"
		p.Status.HostIPs = []corev1.HostIP{{IP: "127.0.0.1"}}
		ip := k.podIP(p.UID)
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.Status.StartTime = &now
		t := true
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: "fake://" + c.Image, Ready: true, Started: &t,
				ContainerID: "fake://" + string(p.UID) + "/" + c.Name,
				State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
		setPodCondition(p, corev1.PodScheduled, corev1.ConditionTrue, "", now)
		setPodCondition(p, corev1.PodInitialized, corev1.ConditionTrue, "", now)
		setPodCondition(p, corev1.ContainersReady, corev1.ConditionTrue, "", now)
		setPodCondition(p, corev1.PodReady, corev1.ConditionTrue, "", now)
		_, err := k.client.CoreV1().Pods(p.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
		// The update event brings it back to the Running case.
		return 0, nil
	}
}

func (k *kubelet) worker(ctx context.Context) {
	for {
		key, shutdown := k.queue.Get()
		if shutdown {
			return
		}
		after, err := k.sync(ctx, key)
		switch {
		case err != nil:
			if !apierrors.IsConflict(err) {
				fmt.Fprintf(os.Stderr, "fake-kubelet: pod %s: %v (retrying)\n", key, err)
			}
			k.queue.AddRateLimited(key)
		case after > 0:
			k.queue.Forget(key)
			k.queue.AddAfter(key, after)
		default:
			k.queue.Forget(key)
		}
		k.queue.Done(key)
	}
}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the API server")
	nodesFlag := flag.String("nodes", "", `nodes: "name:cpu=64,memory=512Gi,nvidia.com/gpu=8;name2:..." or a YAML file`)
	heartbeat := flag.Duration("heartbeat", 10*time.Second, "how often the nodes' Ready condition is refreshed")
	workers := flag.Int("workers", 8, "pods handled in parallel")
	qps := flag.Float64("qps", 200, "client QPS")
	flag.Parse()
	if *nodesFlag == "" {
		fmt.Fprintln(os.Stderr, "fake-kubelet: --nodes is required")
		os.Exit(2)
	}
	specs, err := parseNodes(*nodesFlag)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(2)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet: kubeconfig:", err)
		os.Exit(2)
	}
	cfg.QPS, cfg.Burst = float32(*qps), int(*qps*2)
	cfg.UserAgent = "artel-fake-kubelet"
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()

	k := &kubelet{client: client, nodes: map[string]nodeSpec{}, podIPs: map[types.UID]string{},
		queue: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]())}
	for _, n := range specs {
		if _, err := resourceList(n.Capacity); err != nil {
			fmt.Fprintf(os.Stderr, "fake-kubelet: node %s: %v\n", n.Name, err)
			os.Exit(2)
		}
		k.nodes[n.Name] = n
	}
	// Nodes first (retrying until the API server answers), then the heartbeat.
	for _, n := range specs {
		for {
			if err := k.ensureNode(ctx, n); err == nil {
				break
			} else {
				fmt.Fprintln(os.Stderr, "fake-kubelet:", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Second):
			}
		}
	}
	go func() {
		t := time.NewTicker(*heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, n := range specs {
					if err := k.ensureNode(ctx, n); err != nil {
						fmt.Fprintln(os.Stderr, "fake-kubelet: heartbeat:", err)
					}
				}
			}
		}
	}()

	// Pods bound to any node; the ones on other nodes are ignored.
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName!=" }))
	inf := factory.Core().V1().Pods().Informer()
	enqueue := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		if _, ours := k.nodes[pod.Spec.NodeName]; ours {
			k.queue.Add(types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	})
	k.podLister = inf.GetIndexer()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	for i := 0; i < *workers; i++ {
		go k.worker(ctx)
	}
	fmt.Fprintf(os.Stderr, "fake-kubelet: %d node(s) Ready; handling their pods\n", len(specs))
	<-ctx.Done()
	k.queue.ShutDown()
}
