// The Jobs mode of kueue-load (issue 12 §6; bench/kube_jobs.sh runs it):
// --jobs J Jobs of --pods-per-job P pods each, labelled with a LocalQueue,
// through the real Job controller and kube-scheduler onto the nodes the fake
// kubelet registered. It measures the time from the first create until every
// pod is bound (spec.nodeName set), the controller's and the API server's
// CPU seconds and peak RSS, and the controller's API requests per Job.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

type jobsOptions struct {
	jobs, podsPerJob int
	gpusPerPod       string
	cqGPUs           string // nominal GPU quota of each ClusterQueue
}

// createObject creates one object; an existing one is an error naming it (a
// run needs a fresh cluster or another --prefix).
func createObject(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, ns string, obj map[string]any) error {
	u := &unstructured.Unstructured{Object: obj}
	var err error
	if ns == "" {
		_, err = dyn.Resource(gvr).Create(ctx, u, metav1.CreateOptions{})
	} else {
		_, err = dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
	}
	if apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%s %s/%s already exists: use a fresh cluster or another --prefix", gvr.Resource, ns, u.GetName())
	}
	return err
}

// parallelFn runs fn(0..n-1) on `workers` goroutines; the first error fails the run.
func parallelFn(workers int, fail func(error)) func(n int, fn func(i int) error) {
	return func(n int, fn func(i int) error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		var once sync.Once
		var firstErr error
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					i := int(next.Add(1) - 1)
					if i >= n {
						return
					}
					if err := fn(i); err != nil {
						once.Do(func() { firstErr = err })
						return
					}
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			fail(firstErr)
		}
	}
}

func runJobs(ctx context.Context, dyn dynamic.Interface, kube *kubernetes.Clientset, o options, jo jobsOptions,
	parallel func(n int, fn func(i int) error), fail func(error)) {
	create := func(gvr schema.GroupVersionResource, ns string, obj map[string]any) error {
		return createObject(ctx, dyn, gvr, ns, obj)
	}
	nsName := func(i int) string { return fmt.Sprintf("%s-ns-%d", o.prefix, i) }
	gpus := mustQ(jo.gpusPerPod, "--gpus-per-pod")
	quota := mustQ(jo.cqGPUs, "--cq-gpus")
	setupStart := time.Now()
	flavor := o.prefix + "-gpu"
	if err := create(gvrFlavor, "", map[string]any{"apiVersion": group + "/v1beta2", "kind": "ResourceFlavor",
		"metadata": map[string]any{"name": flavor}, "spec": map[string]any{}}); err != nil {
		fail(err)
	}
	for i := 0; i < o.namespaces; i++ {
		if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nsName(i)}},
			metav1.CreateOptions{}); err != nil {
			fail(err)
		}
		cq := fmt.Sprintf("%s-cq-%d", o.prefix, i)
		spec := map[string]any{
			"namespaceSelector": map[string]any{},
			"resourceGroups": []any{map[string]any{"coveredResources": []any{"cpu", "memory", "nvidia.com/gpu"},
				"flavors": []any{map[string]any{"name": flavor, "resources": []any{
					map[string]any{"name": "cpu", "nominalQuota": "100000"},
					map[string]any{"name": "memory", "nominalQuota": "100000Gi"},
					map[string]any{"name": "nvidia.com/gpu", "nominalQuota": quota.String()},
				}}}}},
		}
		if err := create(gvrCQ, "", map[string]any{"apiVersion": group + "/v1beta2", "kind": "ClusterQueue",
			"metadata": map[string]any{"name": cq}, "spec": spec}); err != nil {
			fail(err)
		}
		if err := create(gvrLQ, nsName(i), map[string]any{"apiVersion": group + "/v1beta2", "kind": "LocalQueue",
			"metadata": map[string]any{"name": "default", "namespace": nsName(i)},
			"spec":     map[string]any{"clusterQueue": cq}}); err != nil {
			fail(err)
		}
	}
	fmt.Printf("setup: 1 ResourceFlavor, %d ClusterQueues of %s GPUs, %d LocalQueues in %.1fs\n",
		o.namespaces, quota.String(), o.namespaces, time.Since(setupStart).Seconds())

	// Pods of the benchmark's Jobs, from an informer: bound = spec.nodeName set.
	want := jo.jobs * jo.podsPerJob
	var mu sync.Mutex
	bound := map[string]bool{}
	var lastBind time.Time
	done := make(chan struct{})
	var doneOnce sync.Once
	factory := informers.NewSharedInformerFactoryWithOptions(kube, 0,
		informers.WithTweakListOptions(func(lo *metav1.ListOptions) { lo.LabelSelector = "artel.dev/bench=" + o.prefix }))
	podInf := factory.Core().V1().Pods().Informer()
	observe := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		mu.Lock()
		if !bound[p.Namespace+"/"+p.Name] {
			bound[p.Namespace+"/"+p.Name] = true
			lastBind = time.Now()
			if len(bound) >= want {
				doneOnce.Do(func() { close(done) })
			}
		}
		mu.Unlock()
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: observe, UpdateFunc: func(_, n any) { observe(n) }}); err != nil {
		fail(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	factory.WaitForCacheSync(stop)

	metricsBefore, merr := scrape(ctx, kube.RESTClient())
	if merr != nil {
		fmt.Fprintln(os.Stderr, "kueue-load: /metrics:", merr)
	}
	ctlBefore, apiBefore := sampleProc(o.controllerPID), sampleProc(o.apiserverPID)
	start := time.Now()
	par := int32(jo.podsPerJob)
	suspend := true
	parallel(jo.jobs, func(i int) error {
		ns := nsName(i % o.namespaces)
		labels := map[string]string{"artel.dev/bench": o.prefix}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-job-%d", o.prefix, i), Namespace: ns,
				Labels: map[string]string{"kueue.x-k8s.io/queue-name": "default", "artel.dev/bench": o.prefix}},
			Spec: batchv1.JobSpec{
				Parallelism: &par, Completions: &par, Suspend: &suspend,
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers: []corev1.Container{{Name: "main", Image: "registry.invalid/bench:1",
							Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
								corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"),
								"nvidia.com/gpu": gpus}, Limits: corev1.ResourceList{"nvidia.com/gpu": gpus}}}},
					},
				},
			},
		}
		_, err := kube.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
		return err
	})
	created := time.Since(start)
	fmt.Printf("created %d Jobs of %d pods in %.1fs\n", jo.jobs, jo.podsPerJob, created.Seconds())
	timedOut := false
	select {
	case <-done:
	case <-time.After(time.Until(start.Add(o.timeout))):
		timedOut = true
	}
	mu.Lock()
	nbound, last := len(bound), lastBind
	mu.Unlock()
	ctlAfter, apiAfter := sampleProc(o.controllerPID), sampleProc(o.apiserverPID)
	metricsAfter, _ := scrape(ctx, kube.RESTClient())
	elapsed := time.Since(start)
	if !timedOut && !last.IsZero() {
		elapsed = last.Sub(start)
	}
	fmt.Printf("pods bound: %d of %d\n", nbound, want)
	if timedOut {
		fmt.Printf("timed out after %.1fs\n", o.timeout.Seconds())
	} else {
		fmt.Printf("time from the first create until every pod is bound: %.2fs\n", elapsed.Seconds())
	}
	report := func(name string, before, after procSample) float64 {
		if !before.ok || !after.ok {
			return -1
		}
		cpu := after.cpuSeconds - before.cpuSeconds
		fmt.Printf("%s: CPU %.2fs over the run, peak RSS (VmHWM) %.0f MiB\n", name, cpu, float64(after.hwmKiB)/1024)
		return cpu
	}
	ctlCPU := report("controller", ctlBefore, ctlAfter)
	report("kube-apiserver", apiBefore, apiAfter)
	perJob := -1.0
	if merr == nil && metricsAfter != "" && o.controllerUser != "" {
		fs := `flow_schema="` + flowSchemaName(o) + `"`
		ctl := metricSum(metricsAfter, "apiserver_flowcontrol_dispatched_requests_total", fs) -
			metricSum(metricsBefore, "apiserver_flowcontrol_dispatched_requests_total", fs)
		if jo.jobs > 0 {
			perJob = ctl / float64(jo.jobs)
		}
		fmt.Printf("API requests of the controller (user %s): %.0f, per Job %.2f\n", o.controllerUser, ctl, perJob)
	}
	summary := map[string]any{"jobs": jo.jobs, "pods_per_job": jo.podsPerJob, "pods_bound": nbound, "timed_out": timedOut,
		"seconds": elapsed.Seconds(), "create_seconds": created.Seconds(), "controller_cpu_seconds": ctlCPU,
		"controller_requests_per_job": perJob}
	js, _ := json.Marshal(summary)
	fmt.Printf("summary: %s\n", js)
	if timedOut {
		os.Exit(3)
	}
}
