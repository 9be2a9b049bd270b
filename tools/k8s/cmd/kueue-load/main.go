// Command kueue-load measures how fast a Kueue-compatible controller admits
// Workloads on a real API server (issue 11 §6; bench/kube_admission.sh runs
// it). It creates F ResourceFlavors, N ClusterQueues (in cohorts of
// --cohort-size), one LocalQueue per ClusterQueue (spread over --namespaces
// namespaces) and W Workloads (kueue.x-k8s.io/v1beta2, one pod set of one pod
// with cpu/memory requests) round-robin over the LocalQueues; then it watches
// the Workloads until every one that fits has QuotaReserved=True, or until
// --timeout. It prints the time to admit them all, admissions per second,
// and, when given the pids, the controller's and the API server's CPU seconds
// (utime+stime from /proc/PID/stat, the delta over the run) and peak RSS
// (VmHWM: the process's peak since it started), and API requests per
// admission from the API server's /metrics (apiserver_request_total, all
// clients; and, with --controller-user, the requests of that user through a
// FlowSchema of its own: apiserver_flowcontrol_dispatched_requests_total).
//
// Without a controller nothing is admitted: the run ends at --timeout and
// reports 0 admitted (exit code 3). Test tooling only.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const group = "kueue.x-k8s.io"

var (
	gvrFlavor   = schema.GroupVersionResource{Group: group, Version: "v1beta2", Resource: "resourceflavors"}
	gvrCQ       = schema.GroupVersionResource{Group: group, Version: "v1beta2", Resource: "clusterqueues"}
	gvrLQ       = schema.GroupVersionResource{Group: group, Version: "v1beta2", Resource: "localqueues"}
	gvrWorkload = schema.GroupVersionResource{Group: group, Version: "v1beta2", Resource: "workloads"}
	gvrFS       = schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "flowschemas"}
	gvrPL       = schema.GroupVersionResource{Group: "flowcontrol.apiserver.k8s.io", Version: "v1", Resource: "prioritylevelconfigurations"}
)

type options struct {
	flavors, cqs, cohortSize, namespaces, workloads, workers int
	cqCPU, cqMemory, wlCPU, wlMemory                         string
	prefix, controllerUser                                   string
	controllerPID, apiserverPID                              int
	timeout                                                  time.Duration
	expect                                                   int
}

// procSample is what /proc says about a process at one moment.
type procSample struct {
	cpuSeconds float64
	hwmKiB     int64
	ok         bool
}

func sampleProc(pid int) procSample {
	if pid <= 0 {
		return procSample{}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}
	}
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procSample{}
	}
	f := strings.Fields(s[i+1:])
	// After the command: state(0) ppid(1) ... utime(11) stime(12), in clock ticks (USER_HZ = 100 on Linux).
	if len(f) < 13 {
		return procSample{}
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	out := procSample{cpuSeconds: (ut + st) / 100, ok: true}
	if fh, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
				out.hwmKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
		fh.Close()
	}
	return out
}

// metricSum sums the samples of `name` whose labels contain every `want` (label="value").
func metricSum(text, name string, want ...string) float64 {
	var sum float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name) || len(line) <= len(name) || (line[len(name)] != '{' && line[len(name)] != ' ') {
			continue
		}
		match := true
		for _, w := range want {
			if !strings.Contains(line, w) {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		sp := strings.LastIndexByte(line, ' ')
		v, err := strconv.ParseFloat(line[sp+1:], 64)
		if err == nil {
			sum += v
		}
	}
	return sum
}

func scrape(ctx context.Context, rc rest.Interface) (string, error) {
	b, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	return string(b), err
}

func quotaReserved(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "QuotaReserved" && m["status"] == "True" {
			return true
		}
	}
	return false
}

func mustQ(s, what string) resource.Quantity {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kueue-load: %s %q: %v\n", what, s, err)
		os.Exit(2)
	}
	return q
}

func main() {
	var o options
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig (admin) of the API server")
	flag.IntVar(&o.flavors, "flavors", 1, "ResourceFlavors (each ClusterQueue lists them all, each with the full quota)")
	flag.IntVar(&o.cqs, "cqs", 1000, "ClusterQueues (one LocalQueue each)")
	flag.IntVar(&o.cohortSize, "cohort-size", 10, "ClusterQueues per cohort (0: no cohorts)")
	flag.IntVar(&o.namespaces, "namespaces", 10, "namespaces the LocalQueues and Workloads are spread over")
	flag.IntVar(&o.workloads, "workloads", 10000, "Workloads, round-robin over the LocalQueues")
	flag.StringVar(&o.cqCPU, "cq-cpu", "10", "nominal cpu quota of each ClusterQueue per flavor")
	flag.StringVar(&o.cqMemory, "cq-memory", "40Gi", "nominal memory quota of each ClusterQueue per flavor")
	flag.StringVar(&o.wlCPU, "wl-cpu", "1", "cpu request of each Workload's pod")
	flag.StringVar(&o.wlMemory, "wl-memory", "1Gi", "memory request of each Workload's pod")
	flag.StringVar(&o.prefix, "prefix", "bench", "name prefix of every object created")
	flag.IntVar(&o.workers, "workers", 32, "parallel creators")
	qps := flag.Float64("qps", 1000, "client-side QPS of this tool")
	flag.IntVar(&o.controllerPID, "controller-pid", 0, "pid of the controller (CPU seconds, peak RSS)")
	flag.IntVar(&o.apiserverPID, "apiserver-pid", 0, "pid of kube-apiserver (CPU seconds, peak RSS)")
	flag.StringVar(&o.controllerUser, "controller-user", "", "the controller's user name: its requests are counted through a FlowSchema of their own")
	flag.DurationVar(&o.timeout, "timeout", 10*time.Minute, "give up waiting for admissions after this long (from the first create)")
	var jo jobsOptions
	flag.IntVar(&jo.jobs, "jobs", 0, "Jobs mode: this many batch/v1 Jobs instead of Workloads (bench/kube_jobs.sh)")
	flag.IntVar(&jo.podsPerJob, "pods-per-job", 8, "Jobs mode: parallelism = completions of each Job")
	flag.StringVar(&jo.gpusPerPod, "gpus-per-pod", "1", "Jobs mode: nvidia.com/gpu of each pod")
	flag.StringVar(&jo.cqGPUs, "cq-gpus", "100000", "Jobs mode: GPU quota of each ClusterQueue (one per namespace)")
	flag.IntVar(&o.expect, "expect", -1, "Workloads expected to fit (default: computed from the quotas, without borrowing)")
	flag.Parse()
	if o.cqs <= 0 || o.flavors <= 0 || o.workloads < 0 || o.namespaces <= 0 || o.workers <= 0 {
		fmt.Fprintln(os.Stderr, "kueue-load: --cqs, --flavors, --namespaces and --workers must be positive")
		os.Exit(2)
	}
	cpuQ, memQ := mustQ(o.cqCPU, "--cq-cpu"), mustQ(o.cqMemory, "--cq-memory")
	wcpu, wmem := mustQ(o.wlCPU, "--wl-cpu"), mustQ(o.wlMemory, "--wl-memory")

	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kueue-load: kubeconfig:", err)
		os.Exit(2)
	}
	cfg.QPS, cfg.Burst = float32(*qps), int(*qps)
	cfg.UserAgent = "artel-kueue-load"
	dyn := dynamic.NewForConfigOrDie(cfg)
	kube := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	// Expected to fit: per ClusterQueue, as many as its quota holds (all flavors), at most its share.
	if o.expect < 0 {
		perCQ := int64(1 << 62)
		if wcpu.MilliValue() > 0 {
			perCQ = min(perCQ, cpuQ.MilliValue()/wcpu.MilliValue())
		}
		if wmem.Value() > 0 {
			perCQ = min(perCQ, memQ.Value()/wmem.Value())
		}
		perCQ *= int64(o.flavors)
		total := 0
		for i := 0; i < o.cqs; i++ {
			share := o.workloads / o.cqs
			if i < o.workloads%o.cqs {
				share++
			}
			total += int(min(int64(share), perCQ))
		}
		o.expect = total
	}

	// The controller's own FlowSchema (its requests are then counted apart).
	if o.controllerUser != "" {
		if err := setupFlowSchema(ctx, dyn, o); err != nil {
			fmt.Fprintln(os.Stderr, "kueue-load: flow schema:", err)
			os.Exit(1)
		}
	}

	create := func(gvr schema.GroupVersionResource, ns string, obj map[string]any) error {
		return createObject(ctx, dyn, gvr, ns, obj)
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "kueue-load:", err)
		os.Exit(1)
	}
	if jo.jobs > 0 {
		runJobs(ctx, dyn, kube, o, jo, parallelFn(o.workers, fail), fail)
		return
	}
	nsName := func(i int) string { return fmt.Sprintf("%s-ns-%d", o.prefix, i%o.namespaces) }
	for i := 0; i < o.namespaces; i++ {
		obj := map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": nsName(i)}}
		if err := create(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", obj); err != nil {
			fail(err)
		}
	}
	setupStart := time.Now()
	var flavorNames []string
	for f := 0; f < o.flavors; f++ {
		name := fmt.Sprintf("%s-flavor-%d", o.prefix, f)
		flavorNames = append(flavorNames, name)
		if err := create(gvrFlavor, "", map[string]any{"apiVersion": group + "/v1beta2", "kind": "ResourceFlavor",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{}}); err != nil {
			fail(err)
		}
	}
	cqName := func(i int) string { return fmt.Sprintf("%s-cq-%d", o.prefix, i) }
	lqName := func(i int) string { return fmt.Sprintf("%s-lq-%d", o.prefix, i) }
	parallel := parallelFn(o.workers, fail)
	parallel(o.cqs, func(i int) error {
		var flavors []any
		for _, f := range flavorNames {
			flavors = append(flavors, map[string]any{"name": f, "resources": []any{
				map[string]any{"name": "cpu", "nominalQuota": cpuQ.String()},
				map[string]any{"name": "memory", "nominalQuota": memQ.String()},
			}})
		}
		spec := map[string]any{
			"namespaceSelector": map[string]any{},
			"resourceGroups":    []any{map[string]any{"coveredResources": []any{"cpu", "memory"}, "flavors": flavors}},
		}
		if o.cohortSize > 0 {
			spec["cohortName"] = fmt.Sprintf("%s-cohort-%d", o.prefix, i/o.cohortSize)
		}
		return create(gvrCQ, "", map[string]any{"apiVersion": group + "/v1beta2", "kind": "ClusterQueue",
			"metadata": map[string]any{"name": cqName(i)}, "spec": spec})
	})
	parallel(o.cqs, func(i int) error {
		return create(gvrLQ, nsName(i), map[string]any{"apiVersion": group + "/v1beta2", "kind": "LocalQueue",
			"metadata": map[string]any{"name": lqName(i), "namespace": nsName(i)},
			"spec":     map[string]any{"clusterQueue": cqName(i)}})
	})
	fmt.Printf("setup: %d ResourceFlavors, %d ClusterQueues (cohorts of %d), %d LocalQueues in %d namespaces in %.1fs\n",
		o.flavors, o.cqs, o.cohortSize, o.cqs, o.namespaces, time.Since(setupStart).Seconds())

	// Watch every Workload of the prefix's namespaces from now on (the list's resourceVersion).
	list, err := dyn.Resource(gvrWorkload).List(ctx, metav1.ListOptions{LabelSelector: "artel.dev/bench=" + o.prefix})
	if err != nil {
		fail(fmt.Errorf("list workloads: %v", err))
	}
	var mu sync.Mutex
	reserved := map[string]time.Time{}
	var lastAdmit time.Time
	done := make(chan struct{})
	var doneOnce sync.Once
	observe := func(u *unstructured.Unstructured) {
		if !quotaReserved(u) {
			return
		}
		key := u.GetNamespace() + "/" + u.GetName()
		mu.Lock()
		if _, seen := reserved[key]; !seen {
			now := time.Now()
			reserved[key] = now
			lastAdmit = now
			if o.expect > 0 && len(reserved) >= o.expect {
				doneOnce.Do(func() { close(done) })
			}
		}
		mu.Unlock()
	}
	for i := range list.Items {
		observe(&list.Items[i])
	}
	rv := list.GetResourceVersion()
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for watchCtx.Err() == nil {
			w, err := dyn.Resource(gvrWorkload).Watch(watchCtx, metav1.ListOptions{
				LabelSelector: "artel.dev/bench=" + o.prefix, ResourceVersion: rv, AllowWatchBookmarks: true})
			if err != nil {
				time.Sleep(200 * time.Millisecond) // reconnect backoff
				continue
			}
			for ev := range w.ResultChan() {
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok {
					continue
				}
				if ev.Type == watch.Error {
					// 410: re-list (a rare event here; admissions seen stay counted).
					l, err := dyn.Resource(gvrWorkload).List(watchCtx, metav1.ListOptions{LabelSelector: "artel.dev/bench=" + o.prefix})
					if err == nil {
						for i := range l.Items {
							observe(&l.Items[i])
						}
						rv = l.GetResourceVersion()
					}
					break
				}
				if r := u.GetResourceVersion(); r != "" {
					rv = r
				}
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					observe(u)
				}
			}
			w.Stop()
		}
	}()

	metricsBefore, merr := scrape(ctx, kube.RESTClient())
	if merr != nil {
		fmt.Fprintln(os.Stderr, "kueue-load: /metrics:", merr)
	}
	ctlBefore, apiBefore := sampleProc(o.controllerPID), sampleProc(o.apiserverPID)
	start := time.Now()
	parallel(o.workloads, func(i int) error {
		q := i % o.cqs
		obj := map[string]any{"apiVersion": group + "/v1beta2", "kind": "Workload",
			"metadata": map[string]any{"name": fmt.Sprintf("%s-wl-%d", o.prefix, i), "namespace": nsName(q),
				"labels": map[string]any{"artel.dev/bench": o.prefix}},
			"spec": map[string]any{"queueName": lqName(q), "podSets": []any{map[string]any{
				"name": "main", "count": int64(1),
				"template": map[string]any{"spec": map[string]any{"restartPolicy": "Never", "containers": []any{
					map[string]any{"name": "main", "image": "registry.invalid/bench:1", "resources": map[string]any{
						"requests": map[string]any{"cpu": wcpu.String(), "memory": wmem.String()}}}}}},
			}}}}
		return create(gvrWorkload, nsName(q), obj)
	})
	created := time.Since(start)
	fmt.Printf("created %d Workloads in %.1fs (%.0f/s)\n", o.workloads, created.Seconds(), float64(o.workloads)/created.Seconds())
	if o.expect == 0 {
		doneOnce.Do(func() { close(done) })
	}
	timedOut := false
	select {
	case <-done:
	case <-time.After(time.Until(start.Add(o.timeout))):
		timedOut = true
	}
	stopWatch()
	mu.Lock()
	admitted, last := len(reserved), lastAdmit
	mu.Unlock()
	ctlAfter, apiAfter := sampleProc(o.controllerPID), sampleProc(o.apiserverPID)
	metricsAfter, _ := scrape(ctx, kube.RESTClient())

	elapsed := time.Since(start)
	if !timedOut && !last.IsZero() {
		elapsed = last.Sub(start)
	}
	fmt.Printf("admitted (QuotaReserved=True): %d of %d expected to fit (%d created)\n", admitted, o.expect, o.workloads)
	if timedOut {
		fmt.Printf("timed out after %.1fs\n", o.timeout.Seconds())
	} else {
		fmt.Printf("time to admit all that fit: %.2fs from the first create, %.2fs after the last create\n",
			elapsed.Seconds(), (elapsed - created).Seconds())
	}
	if admitted > 0 {
		span := last.Sub(start).Seconds()
		fmt.Printf("admissions per second: %.1f\n", float64(admitted)/span)
	} else {
		fmt.Printf("admissions per second: 0\n")
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
	apiCPU := report("kube-apiserver", apiBefore, apiAfter)
	if ctlCPU >= 0 && apiCPU > 0 {
		fmt.Printf("controller CPU / kube-apiserver CPU: %.1f%%\n", 100*ctlCPU/apiCPU)
	}
	if merr == nil && metricsAfter != "" {
		total := metricSum(metricsAfter, "apiserver_request_total") - metricSum(metricsBefore, "apiserver_request_total")
		per := "n/a"
		if admitted > 0 {
			per = fmt.Sprintf("%.2f", total/float64(admitted))
		}
		fmt.Printf("API requests (apiserver_request_total, all clients, this tool's %d creates included): %.0f, per admission %s\n",
			o.workloads, total, per)
		if o.controllerUser != "" {
			fs := `flow_schema="` + flowSchemaName(o) + `"`
			ctl := metricSum(metricsAfter, "apiserver_flowcontrol_dispatched_requests_total", fs) -
				metricSum(metricsBefore, "apiserver_flowcontrol_dispatched_requests_total", fs)
			per := "n/a"
			if admitted > 0 {
				per = fmt.Sprintf("%.2f", ctl/float64(admitted))
			}
			fmt.Printf("API requests of the controller (user %s): %.0f, per admission %s\n", o.controllerUser, ctl, per)
		}
	}
	summary := map[string]any{"workloads": o.workloads, "cqs": o.cqs, "flavors": o.flavors, "expected": o.expect,
		"admitted": admitted, "timed_out": timedOut, "seconds": elapsed.Seconds(), "create_seconds": created.Seconds()}
	js, _ := json.Marshal(summary)
	fmt.Printf("summary: %s\n", js)
	if timedOut {
		os.Exit(3)
	}
}

func flowSchemaName(o options) string { return o.prefix + "-controller" }

// setupFlowSchema gives the controller's user a priority level and flow
// schema of its own, so that apiserver_flowcontrol_dispatched_requests_total
// counts its requests apart (apiserver_request_total has no user label).
func setupFlowSchema(ctx context.Context, dyn dynamic.Interface, o options) error {
	pl := map[string]any{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
		"metadata": map[string]any{"name": flowSchemaName(o)},
		"spec": map[string]any{"type": "Limited", "limited": map[string]any{
			"nominalConcurrencyShares": int64(100), "lendablePercent": int64(0),
			"limitResponse": map[string]any{"type": "Queue", "queuing": map[string]any{
				"queues": int64(64), "handSize": int64(6), "queueLengthLimit": int64(1000)}}}}}
	fs := map[string]any{"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
		"metadata": map[string]any{"name": flowSchemaName(o)},
		"spec": map[string]any{
			"matchingPrecedence":         int64(2),
			"priorityLevelConfiguration": map[string]any{"name": flowSchemaName(o)},
			"distinguisherMethod":        map[string]any{"type": "ByUser"},
			"rules": []any{map[string]any{
				"subjects": []any{map[string]any{"kind": "User", "user": map[string]any{"name": o.controllerUser}}},
				"resourceRules": []any{map[string]any{"verbs": []any{"*"}, "apiGroups": []any{"*"}, "resources": []any{"*"},
					"clusterScope": true, "namespaces": []any{"*"}}},
				"nonResourceRules": []any{map[string]any{"verbs": []any{"*"}, "nonResourceURLs": []any{"*"}}},
			}},
		}}
	for _, x := range []struct {
		gvr schema.GroupVersionResource
		obj map[string]any
	}{{gvrPL, pl}, {gvrFS, fs}} {
		_, err := dyn.Resource(x.gvr).Create(ctx, &unstructured.Unstructured{Object: x.obj}, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return nil
}
