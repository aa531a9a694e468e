// Package deploy_test validates deploy/ without a container engine or a cluster: every file
// parses, every Kubernetes object decodes strictly into its typed API struct, and the compose
// file, the Dockerfile, the systemd units and the Grafana dashboard agree with each other, with
// docs/CONFIGURATION.md's table, with sysctl/*.conf and with the metrics the code registers.
package deploy_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"popupsvc/sysctl"
	sigsyaml "sigs.k8s.io/yaml"
)

// Paths are relative to this package's directory (deploy/), where `go test` runs it.
const (
	repoRoot        = ".."
	configDocPath   = "../docs/CONFIGURATION.md"
	k8sDir          = "k8s"
	composePath     = "docker-compose.yml"
	composeHAPath   = "docker-compose.ha.yml"
	redisHADir      = "k8s/redis-ha"
	redisClusterDir = "k8s/redis-ha/cluster"
	dockerfile      = "Dockerfile"
	dockerignore    = "Dockerfile.dockerignore"
	systemdDir      = "systemd"
	envExample      = "systemd/popup.env.example"
	dashboardPath   = "grafana/popup-dashboard.json"
	sysctlReadme    = "../sysctl/README.md"
)

// isLoadtestVar: variables read by loadtest/ (locustfile.py: POPUP_TARGET, POPUP_ADMIN_URL, the
// POPUP_LOAD_* knobs) and by locust itself (LOCUST_*), not by the Go binaries, so they are not in
// docs/CONFIGURATION.md's table. Only the locust services may set them.
func isLoadtestVar(name string) bool {
	return name == "POPUP_TARGET" || name == "POPUP_ADMIN_URL" ||
		strings.HasPrefix(name, "POPUP_LOAD_") || strings.HasPrefix(name, "LOCUST_")
}

// isGoRuntimeVar: variables of the Go runtime (not of docs/CONFIGURATION.md's table) that the
// deploy files may set: GOMEMLIMIT next to a memory limit, GOGC.
func isGoRuntimeVar(name string) bool { return name == "GOMEMLIMIT" || name == "GOGC" }

// ---------------------------------------------------------------- every file parses ---

func TestEveryYAMLAndJSONFileParses(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch filepath.Ext(path) {
		case ".yml", ".yaml", ".json":
			files = append(files, path)
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, path := range files {
		t.Run(path, func(t *testing.T) {
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			if filepath.Ext(path) == ".json" {
				var v any
				require.NoError(t, json.Unmarshal(data, &v), "invalid JSON")
				return
			}
			docs := yamlDocs(t, path)
			require.NotEmpty(t, docs, "no YAML document")
			for i, doc := range docs {
				// Strict: duplicate keys are an error (the YAML spec says so; many parsers do not).
				_, err := sigsyaml.YAMLToJSONStrict(doc)
				require.NoError(t, err, "document %d", i+1)
			}
		})
	}
}

// ------------------------------------------------------------------------ Kubernetes ---

// k8sObjects are the typed objects of deploy/k8s, decoded strictly.
type k8sObjects struct {
	deployments  map[string]*appsv1.Deployment
	statefulSets map[string]*appsv1.StatefulSet
	services     map[string]*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	secrets      map[string]*corev1.Secret
	jobs         map[string]*batchv1.Job
	hpas         map[string]*autoscalingv2.HorizontalPodAutoscaler
	pdbs         map[string]*policyv1.PodDisruptionBudget
	namespaces   map[string]*corev1.Namespace
	files        []string // every manifest file except kustomization.yaml
	resourceSeen int
}

// newObject returns an empty typed object for apiVersion/kind, and where to keep it.
func (o *k8sObjects) newObject(apiVersion, kind string) (obj metav1.Object, keep func(), err error) {
	switch apiVersion + "/" + kind {
	case "apps/v1/Deployment":
		v := &appsv1.Deployment{}
		return v, func() { o.deployments[v.Name] = v }, nil
	case "apps/v1/StatefulSet":
		v := &appsv1.StatefulSet{}
		return v, func() { o.statefulSets[v.Name] = v }, nil
	case "v1/Service":
		v := &corev1.Service{}
		return v, func() { o.services[v.Name] = v }, nil
	case "v1/ConfigMap":
		v := &corev1.ConfigMap{}
		return v, func() { o.configMaps[v.Name] = v }, nil
	case "v1/Secret":
		v := &corev1.Secret{}
		return v, func() { o.secrets[v.Name] = v }, nil
	case "batch/v1/Job":
		v := &batchv1.Job{}
		return v, func() { o.jobs[v.Name] = v }, nil
	case "autoscaling/v2/HorizontalPodAutoscaler":
		v := &autoscalingv2.HorizontalPodAutoscaler{}
		return v, func() { o.hpas[v.Name] = v }, nil
	case "policy/v1/PodDisruptionBudget":
		v := &policyv1.PodDisruptionBudget{}
		return v, func() { o.pdbs[v.Name] = v }, nil
	case "v1/Namespace":
		v := &corev1.Namespace{}
		return v, func() { o.namespaces[v.Name] = v }, nil
	}
	return nil, nil, fmt.Errorf("no typed decoder for %s %s: add it to newObject", apiVersion, kind)
}

func newK8sObjects() *k8sObjects {
	return &k8sObjects{
		deployments: map[string]*appsv1.Deployment{}, statefulSets: map[string]*appsv1.StatefulSet{},
		services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, jobs: map[string]*batchv1.Job{},
		hpas: map[string]*autoscalingv2.HorizontalPodAutoscaler{}, pdbs: map[string]*policyv1.PodDisruptionBudget{},
		namespaces: map[string]*corev1.Namespace{},
	}
}

// loadK8s loads deploy/k8s (the files of the directory itself; its subdirectories are optional
// components, loaded by loadK8sFiles).
func loadK8s(t *testing.T) *k8sObjects {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(k8sDir, "*.yaml"))
	require.NoError(t, err)
	var manifests []string
	for _, path := range paths {
		if filepath.Base(path) != "kustomization.yaml" {
			manifests = append(manifests, path)
		}
	}
	return loadK8sFiles(t, manifests)
}

// loadK8sFiles decodes the objects of the given manifest files strictly.
func loadK8sFiles(t *testing.T, paths []string) *k8sObjects {
	t.Helper()
	o := newK8sObjects()
	for _, path := range paths {
		o.files = append(o.files, filepath.Base(path))
		for i, doc := range yamlDocs(t, path) {
			var tm metav1.TypeMeta
			require.NoError(t, sigsyaml.Unmarshal(doc, &tm), "%s document %d", path, i+1)
			obj, keep, err := o.newObject(tm.APIVersion, tm.Kind)
			require.NoError(t, err, "%s document %d", path, i+1)
			// UnmarshalStrict: an unknown or misspelt field, or a duplicate key, is an error.
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, obj), "%s document %d (%s)", path, i+1, tm.Kind)
			require.NotEmpty(t, obj.GetName(), "%s document %d has no metadata.name", path, i+1)
			require.Empty(t, obj.GetNamespace(), "%s %s: leave metadata.namespace to kustomization.yaml", path, obj.GetName())
			keep()
			o.resourceSeen++
		}
	}
	require.NotZero(t, o.resourceSeen)
	return o
}

func TestKubernetesObjectsDecodeStrictly(t *testing.T) {
	t.Parallel()
	o := loadK8s(t)
	for _, name := range []string{"popup-api", "popup-worker"} {
		assert.Contains(t, o.deployments, name)
	}
	assert.Contains(t, o.services, "popup-api")
	assert.Contains(t, o.services, "popup-api-admin")
	assert.Contains(t, o.hpas, "popup-api")
	assert.Contains(t, o.pdbs, "popup-api")
	assert.Contains(t, o.jobs, "popup-migrate")
	assert.Contains(t, o.configMaps, "popup-config")
	assert.Contains(t, o.secrets, "popup-secrets")
}

// kustomization is the part of kustomize's Kustomization that deploy/k8s uses, decoded
// strictly: a field added there must be added here, which keeps typos out.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Namespace  string   `json:"namespace"`
	Resources  []string `json:"resources"`
	Images     []struct {
		Name    string `json:"name"`
		NewName string `json:"newName,omitempty"`
		NewTag  string `json:"newTag,omitempty"`
		Digest  string `json:"digest,omitempty"`
	} `json:"images"`
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	t.Parallel()
	o := loadK8s(t)
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &k))
	assert.Equal(t, "kustomize.config.k8s.io/v1beta1", k.APIVersion)
	assert.Equal(t, "Kustomization", k.Kind)
	assert.Contains(t, o.namespaces, k.Namespace, "the namespace kustomize sets is created by namespace.yaml")
	assert.ElementsMatch(t, o.files, k.Resources, "kustomization.yaml resources vs the files of deploy/k8s")

	images := map[string]bool{}
	for _, img := range k.Images {
		images[img.Name] = true
	}
	for _, spec := range o.podSpecs() {
		for _, c := range spec.spec.Containers {
			assert.True(t, images[imageName(c.Image)], "%s: image %s is not rewritten by kustomization.yaml images", spec.owner, c.Image)
		}
	}
}

type ownedPodSpec struct {
	owner string
	spec  *corev1.PodSpec
	meta  *metav1.ObjectMeta
}

func (o *k8sObjects) podSpecs() []ownedPodSpec {
	var out []ownedPodSpec
	for _, name := range sortedKeys(o.deployments) {
		d := o.deployments[name]
		out = append(out, ownedPodSpec{"Deployment " + name, &d.Spec.Template.Spec, &d.Spec.Template.ObjectMeta})
	}
	for _, name := range sortedKeys(o.statefulSets) {
		s := o.statefulSets[name]
		out = append(out, ownedPodSpec{"StatefulSet " + name, &s.Spec.Template.Spec, &s.Spec.Template.ObjectMeta})
	}
	for _, name := range sortedKeys(o.jobs) {
		j := o.jobs[name]
		out = append(out, ownedPodSpec{"Job " + name, &j.Spec.Template.Spec, &j.Spec.Template.ObjectMeta})
	}
	return out
}

func TestKubernetesSelectorsAndReferences(t *testing.T) {
	t.Parallel()
	checkSelectorsAndReferences(t, loadK8s(t))
}

// checkSelectorsAndReferences: selectors match pod templates, Services' target ports exist, HPAs
// and PDBs find their pods, envFrom and volumes refer to objects of the set.
func checkSelectorsAndReferences(t *testing.T, o *k8sObjects) {
	t.Helper()
	for name, d := range o.deployments {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		require.NoError(t, err, name)
		assert.True(t, sel.Matches(labels.Set(d.Spec.Template.Labels)), "Deployment %s: selector does not match its pod labels", name)
	}
	for name, s := range o.statefulSets {
		sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
		require.NoError(t, err, name)
		assert.True(t, sel.Matches(labels.Set(s.Spec.Template.Labels)), "StatefulSet %s: selector does not match its pod labels", name)
		svc, ok := o.services[s.Spec.ServiceName]
		if assert.True(t, ok, "StatefulSet %s: serviceName %q is not a Service of the set", name, s.Spec.ServiceName) {
			assert.Equal(t, corev1.ClusterIPNone, svc.Spec.ClusterIP, "StatefulSet %s: its Service %s must be headless", name, svc.Name)
		}
		claims := map[string]bool{}
		for _, c := range s.Spec.VolumeClaimTemplates {
			claims[c.Name] = true
		}
		checkVolumes(t, o, "StatefulSet "+name, &s.Spec.Template.Spec, claims)
	}
	for name, svc := range o.services {
		pods := o.podsSelectedBy(labels.SelectorFromSet(svc.Spec.Selector))
		require.NotEmpty(t, pods, "Service %s selects no pod template", name)
		for _, p := range svc.Spec.Ports {
			for _, spec := range pods {
				assert.True(t, hasContainerPort(spec.spec, p.TargetPort.String()),
					"Service %s port %s: targetPort %s is not a port of %s", name, p.Name, p.TargetPort.String(), spec.owner)
			}
		}
	}
	for name, h := range o.hpas {
		ref := h.Spec.ScaleTargetRef
		require.Equal(t, "Deployment", ref.Kind, "HPA %s", name)
		d, ok := o.deployments[ref.Name]
		require.True(t, ok, "HPA %s scales a Deployment %s that is not in deploy/k8s", name, ref.Name)
		assert.Nil(t, d.Spec.Replicas, "Deployment %s: drop replicas, HPA %s owns the count (apply would reset it)", ref.Name, name)
		require.NotNil(t, h.Spec.MinReplicas, "HPA %s", name)
		assert.GreaterOrEqual(t, *h.Spec.MinReplicas, int32(2), "HPA %s: at least 2 replicas, or the PDB blocks every drain", name)
		assert.LessOrEqual(t, *h.Spec.MinReplicas, h.Spec.MaxReplicas, "HPA %s", name)
		var cpu bool
		for _, m := range h.Spec.Metrics {
			if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU {
				cpu = true
			}
		}
		assert.True(t, cpu, "HPA %s has no CPU resource metric", name)
		for _, c := range d.Spec.Template.Spec.Containers {
			assert.False(t, c.Resources.Requests.Cpu().IsZero(), "HPA %s: container %s needs a CPU request to scale on utilisation", name, c.Name)
		}
	}
	for name, pdb := range o.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		require.NoError(t, err, name)
		assert.NotEmpty(t, o.podsSelectedBy(sel), "PDB %s selects no pod template", name)
	}
	for _, ps := range o.podSpecs() {
		for _, c := range ps.spec.Containers {
			for _, ef := range c.EnvFrom {
				if ef.ConfigMapRef != nil {
					assert.Contains(t, o.configMaps, ef.ConfigMapRef.Name, "%s refers to a missing ConfigMap", ps.owner)
				}
				if ef.SecretRef != nil {
					assert.Contains(t, o.secrets, ef.SecretRef.Name, "%s refers to a missing Secret", ps.owner)
				}
			}
		}
		if !strings.HasPrefix(ps.owner, "StatefulSet ") {
			checkVolumes(t, o, ps.owner, ps.spec, nil)
		}
	}
}

// checkVolumes: every volume mount names a volume of the pod (or a claim template), and
// ConfigMap and Secret volumes refer to objects of the set.
func checkVolumes(t *testing.T, o *k8sObjects, owner string, spec *corev1.PodSpec, claims map[string]bool) {
	t.Helper()
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
		if v.ConfigMap != nil {
			assert.Contains(t, o.configMaps, v.ConfigMap.Name, "%s: volume %s refers to a missing ConfigMap", owner, v.Name)
		}
		if v.Secret != nil {
			assert.Contains(t, o.secrets, v.Secret.SecretName, "%s: volume %s refers to a missing Secret", owner, v.Name)
		}
	}
	for _, c := range append(slices.Clone(spec.InitContainers), spec.Containers...) {
		for _, m := range c.VolumeMounts {
			assert.True(t, volumes[m.Name] || claims[m.Name], "%s/%s: mount of an undeclared volume %s", owner, c.Name, m.Name)
		}
	}
}

func (o *k8sObjects) podsSelectedBy(sel labels.Selector) []ownedPodSpec {
	var out []ownedPodSpec
	for _, ps := range o.podSpecs() {
		if !sel.Empty() && sel.Matches(labels.Set(ps.meta.Labels)) {
			out = append(out, ps)
		}
	}
	return out
}

func hasContainerPort(spec *corev1.PodSpec, port string) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == port || strconv.Itoa(int(p.ContainerPort)) == port {
				return true
			}
		}
	}
	return false
}

// TestKubernetesPodsPassRestricted checks what Pod Security Admission's "restricted" profile
// (enforced by namespace.yaml) requires, plus our own rules: read-only root, resources set.
func TestKubernetesPodsPassRestricted(t *testing.T) {
	t.Parallel()
	o := loadK8s(t)
	for _, ns := range o.namespaces {
		assert.Equal(t, "restricted", ns.Labels["pod-security.kubernetes.io/enforce"], "Namespace %s", ns.Name)
	}
	checkRestrictedPods(t, o)
}

func checkRestrictedPods(t *testing.T, o *k8sObjects) {
	t.Helper()
	for _, ps := range o.podSpecs() {
		psc := ps.spec.SecurityContext
		require.NotNil(t, psc, "%s: no pod securityContext", ps.owner)
		assert.True(t, ptrTrue(psc.RunAsNonRoot), "%s: runAsNonRoot", ps.owner)
		if assert.NotNil(t, psc.SeccompProfile, "%s: seccompProfile", ps.owner) {
			assert.Equal(t, corev1.SeccompProfileTypeRuntimeDefault, psc.SeccompProfile.Type, ps.owner)
		}
		assert.False(t, ps.spec.HostNetwork || ps.spec.HostPID || ps.spec.HostIPC, "%s: host namespaces", ps.owner)
		if ps.spec.AutomountServiceAccountToken != nil {
			assert.False(t, *ps.spec.AutomountServiceAccountToken, "%s: the service needs no API token", ps.owner)
		}
		for _, c := range append(slices.Clone(ps.spec.InitContainers), ps.spec.Containers...) {
			sc := c.SecurityContext
			require.NotNil(t, sc, "%s/%s: no securityContext", ps.owner, c.Name)
			assert.False(t, sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation, "%s/%s: allowPrivilegeEscalation must be false", ps.owner, c.Name)
			assert.True(t, ptrTrue(sc.ReadOnlyRootFilesystem), "%s/%s: readOnlyRootFilesystem", ps.owner, c.Name)
			assert.False(t, ptrTrue(sc.Privileged), "%s/%s: privileged", ps.owner, c.Name)
			if assert.NotNil(t, sc.Capabilities, "%s/%s: capabilities", ps.owner, c.Name) {
				assert.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"), "%s/%s: drop ALL capabilities", ps.owner, c.Name)
				assert.Empty(t, sc.Capabilities.Add, "%s/%s: no added capabilities", ps.owner, c.Name)
			}
			assert.False(t, c.Resources.Requests.Cpu().IsZero(), "%s/%s: CPU request", ps.owner, c.Name)
			assert.False(t, c.Resources.Requests.Memory().IsZero(), "%s/%s: memory request", ps.owner, c.Name)
			assert.False(t, c.Resources.Limits.Memory().IsZero(), "%s/%s: memory limit", ps.owner, c.Name)
		}
	}
}

func TestKubernetesAPIPodSysctlsAreTheSafeKeysOfTheProfile(t *testing.T) {
	t.Parallel()
	o := loadK8s(t)
	api := o.deployments["popup-api"]
	require.NotNil(t, api)
	require.NotNil(t, api.Spec.Template.Spec.SecurityContext)
	got := map[string]string{}
	for _, s := range api.Spec.Template.Spec.SecurityContext.Sysctls {
		got[s.Name] = s.Value
	}

	readmeSafe := k8sSafeSysctlsFromReadme(t)
	for name := range got {
		assert.True(t, readmeSafe[name], "%s is not in sysctl/README.md's Kubernetes safe set: the pod would be rejected (SysctlForbidden)", name)
	}

	want := map[string]string{}
	values := profileValues(t, "api-host")
	for _, k := range profileKeys(t, "api-host") {
		if k.k8s == "safe" {
			want[k.name] = values[k.name]
		}
	}
	require.NotEmpty(t, want)
	assert.Equal(t, want, got, "popup-api pod sysctls vs the safe keys of sysctl/api-host.conf")
}

func TestKubernetesEnvNamesAreInTheConfigurationDoc(t *testing.T) {
	t.Parallel()
	o := loadK8s(t)
	vars := configDocVars(t)
	for name, cm := range o.configMaps {
		for key := range cm.Data {
			assert.Contains(t, vars, key, "ConfigMap %s: %s is not in docs/CONFIGURATION.md's table", name, key)
		}
	}
	for name, s := range o.secrets {
		for key, v := range s.StringData {
			assert.Contains(t, vars, key, "Secret %s: %s is not in docs/CONFIGURATION.md's table", name, key)
			assert.True(t, v == "" || strings.Contains(v, "CHANGE-ME"), "Secret %s: %s must be a CHANGE-ME placeholder or empty, never a real secret", name, key)
		}
		assert.Empty(t, s.Data, "Secret %s: use stringData placeholders, not data", name)
	}
	for _, ps := range o.podSpecs() {
		for _, c := range ps.spec.Containers {
			for _, e := range c.Env {
				if isGoRuntimeVar(e.Name) {
					continue
				}
				assert.Contains(t, vars, e.Name, "%s/%s: env %s is not in docs/CONFIGURATION.md's table", ps.owner, c.Name, e.Name)
			}
		}
	}
}

func TestKubernetesProbesPortsAndCommands(t *testing.T) {
	t.Parallel()
	o := loadK8s(t)
	cfg := o.configMaps["popup-config"]
	require.NotNil(t, cfg)
	env := func(key string) string {
		if v, ok := cfg.Data[key]; ok {
			return v
		}
		return configDocVars(t)[key]
	}
	bins := dockerfileBinaries(t)

	tests := []struct {
		owner     string
		container corev1.Container
		spec      *corev1.PodSpec
		command   []string
		ports     map[string]string // port name → the variable whose port it must be
		liveness  string
		readiness string
	}{
		{"Deployment popup-api", o.deployments["popup-api"].Spec.Template.Spec.Containers[0], &o.deployments["popup-api"].Spec.Template.Spec,
			[]string{"/usr/local/bin/popup-api"}, map[string]string{"http": "POPUP_HTTP_ADDR", "admin": "POPUP_ADMIN_ADDR"}, "/healthz", "/readyz"},
		{"Deployment popup-worker", o.deployments["popup-worker"].Spec.Template.Spec.Containers[0], &o.deployments["popup-worker"].Spec.Template.Spec,
			[]string{"/usr/local/bin/popup-worker", "run"}, map[string]string{"metrics": "POPUP_WORKER_ADDR"}, "/healthz", "/healthz"},
		{"Job popup-migrate", o.jobs["popup-migrate"].Spec.Template.Spec.Containers[0], &o.jobs["popup-migrate"].Spec.Template.Spec,
			[]string{"/usr/local/bin/popup-worker", "migrate"}, nil, "", ""},
	}
	for _, tt := range tests {
		c := tt.container
		assert.Equal(t, tt.command, c.Command, tt.owner)
		assert.Contains(t, bins, c.Command[0], "%s runs a binary the image does not ship", tt.owner)
		for portName, variable := range tt.ports {
			addr := env(variable)
			host, port, err := net.SplitHostPort(addr)
			require.NoError(t, err, "%s=%s", variable, addr)
			assert.NotContains(t, []string{"127.0.0.1", "localhost", "::1"}, host, "%s=%s: loopback in a pod is unreachable for probes and Services", variable, addr)
			assert.True(t, hasNamedPort(c, portName, port), "%s: container port %s must be %s (the port of %s)", tt.owner, portName, port, variable)
		}
		if tt.liveness != "" {
			require.NotNil(t, c.LivenessProbe, tt.owner)
			require.NotNil(t, c.LivenessProbe.HTTPGet, tt.owner)
			assert.Equal(t, tt.liveness, c.LivenessProbe.HTTPGet.Path, "%s liveness", tt.owner)
			assert.True(t, hasContainerPort(tt.spec, c.LivenessProbe.HTTPGet.Port.String()), "%s liveness port", tt.owner)
		}
		if tt.readiness != "" {
			require.NotNil(t, c.ReadinessProbe, tt.owner)
			require.NotNil(t, c.ReadinessProbe.HTTPGet, tt.owner)
			assert.Equal(t, tt.readiness, c.ReadinessProbe.HTTPGet.Path, "%s readiness", tt.owner)
			assert.True(t, hasContainerPort(tt.spec, c.ReadinessProbe.HTTPGet.Port.String()), "%s readiness port", tt.owner)
		}
	}

	// Shutdown fits in the grace period: preStop sleep + POPUP_SHUTDOWN_TIMEOUT < grace.
	api := o.deployments["popup-api"].Spec.Template.Spec
	shutdown := parseSeconds(t, env("POPUP_SHUTDOWN_TIMEOUT"))
	var preStop int64
	if ps := api.Containers[0].Lifecycle; ps != nil && ps.PreStop != nil && ps.PreStop.Sleep != nil {
		preStop = ps.PreStop.Sleep.Seconds
	}
	require.NotNil(t, api.TerminationGracePeriodSeconds)
	assert.Less(t, preStop+shutdown, *api.TerminationGracePeriodSeconds, "popup-api: preStop %ds + POPUP_SHUTDOWN_TIMEOUT %ds must fit in terminationGracePeriodSeconds", preStop, shutdown)
}

// component is the part of kustomize's Component that deploy/k8s/redis-ha uses, decoded strictly.
type component struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
	Patches    []struct {
		Path string `json:"path"`
	} `json:"patches"`
}

// loadComponent loads an optional component of deploy/k8s: its resources (decoded strictly)
// added to deploy/k8s's objects, with its ConfigMap patches applied; and the patches themselves.
func loadComponent(t *testing.T, dir string) (withBase, own *k8sObjects, patches map[string]*corev1.ConfigMap) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	require.NoError(t, err)
	var k component
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &k), dir)
	assert.Equal(t, "kustomize.config.k8s.io/v1alpha1", k.APIVersion, dir)
	assert.Equal(t, "Component", k.Kind, "%s: a Component, used only where it is named", dir)

	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var listed []string
	var resources []string
	for _, r := range k.Resources {
		listed = append(listed, r)
		resources = append(resources, filepath.Join(dir, r))
	}
	patches = map[string]*corev1.ConfigMap{}
	for _, p := range k.Patches {
		listed = append(listed, p.Path)
		for i, doc := range yamlDocs(t, filepath.Join(dir, p.Path)) {
			var cm corev1.ConfigMap
			require.NoError(t, sigsyaml.UnmarshalStrict(doc, &cm), "%s document %d: only ConfigMap patches", p.Path, i+1)
			require.Equal(t, "ConfigMap", cm.Kind, p.Path)
			patches[cm.Name] = &cm
		}
	}
	var present []string
	for _, f := range files {
		if filepath.Base(f) != "kustomization.yaml" {
			present = append(present, filepath.Base(f))
		}
	}
	assert.ElementsMatch(t, present, listed, "%s/kustomization.yaml resources and patches vs the files of %s", dir, dir)

	own = loadK8sFiles(t, resources)
	withBase = loadK8s(t)
	for name, cm := range withBase.configMaps {
		c := cm.DeepCopy()
		if p, ok := patches[name]; ok {
			for k, v := range p.Data {
				c.Data[k] = v
			}
		}
		withBase.configMaps[name] = c
	}
	for name := range patches {
		assert.Contains(t, withBase.configMaps, name, "%s patches a ConfigMap deploy/k8s does not have", dir)
	}
	for n, v := range own.deployments {
		withBase.deployments[n] = v
	}
	for n, v := range own.statefulSets {
		withBase.statefulSets[n] = v
	}
	for n, v := range own.services {
		assert.NotContains(t, withBase.services, n, "%s: Service %s is also in deploy/k8s", dir, n)
		withBase.services[n] = v
	}
	for n, v := range own.configMaps {
		assert.NotContains(t, withBase.configMaps, n, "%s: ConfigMap %s is also in deploy/k8s", dir, n)
		withBase.configMaps[n] = v
	}
	for n, v := range own.pdbs {
		assert.NotContains(t, withBase.pdbs, n, "%s: PDB %s is also in deploy/k8s", dir, n)
		withBase.pdbs[n] = v
	}
	assert.Empty(t, own.secrets, "%s: no Secrets (deploy/k8s/secret.yaml has them)", dir)
	assert.Empty(t, own.namespaces, dir)
	return withBase, own, patches
}

// checkPatchEnv: the keys a component's patches set are docs/CONFIGURATION.md variables, and the ConfigMaps it
// adds are not env sources of the popup binaries (those only read popup-config).
func checkPatchEnv(t *testing.T, dir string, patches map[string]*corev1.ConfigMap) {
	t.Helper()
	vars := configDocVars(t)
	require.NotEmpty(t, patches, dir)
	for name, p := range patches {
		for key := range p.Data {
			assert.Contains(t, vars, key, "%s: ConfigMap %s patch: %s is not in docs/CONFIGURATION.md's table", dir, name, key)
		}
	}
}

func TestKubernetesMainKustomizationLeavesRedisHAOut(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k kustomization // strict: a components: entry would fail here
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &k))
	for _, r := range k.Resources {
		assert.False(t, strings.HasPrefix(r, "redis-ha"), "deploy/k8s includes %s: redis-ha is optional", r)
	}
}

func TestKubernetesRedisHAComponent(t *testing.T) {
	t.Parallel()
	o, own, patches := loadComponent(t, redisHADir)
	checkRestrictedPods(t, own)
	checkSelectorsAndReferences(t, o)
	checkPatchEnv(t, redisHADir, patches)

	require.Len(t, own.statefulSets, 1)
	var sts *appsv1.StatefulSet
	for _, s := range own.statefulSets {
		sts = s
	}
	require.NotNil(t, sts.Spec.Replicas)
	replicas := int(*sts.Spec.Replicas)
	assert.Equal(t, 3, replicas, "StatefulSet %s: a primary and 2 replicas", sts.Name)
	pdbSel := false
	for _, pdb := range own.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		require.NoError(t, err)
		if sel.Matches(labels.Set(sts.Spec.Template.Labels)) {
			pdbSel = true
			require.NotNil(t, pdb.Spec.MaxUnavailable, "PDB %s", pdb.Name)
			assert.Equal(t, 1, pdb.Spec.MaxUnavailable.IntValue(), "PDB %s: one Redis pod at a time keeps the sentinels' quorum", pdb.Name)
		}
	}
	assert.True(t, pdbSel, "no PDB covers StatefulSet %s", sts.Name)
	svc := own.services[sts.Spec.ServiceName]
	require.NotNil(t, svc)
	assert.True(t, svc.Spec.PublishNotReadyAddresses, "Service %s: the pods must find each other before they are ready", svc.Name)

	var containers []string
	for _, c := range sts.Spec.Template.Spec.Containers {
		containers = append(containers, c.Name)
		assert.NotNil(t, c.ReadinessProbe, "%s/%s: readiness probe", sts.Name, c.Name)
		assert.NotNil(t, c.LivenessProbe, "%s/%s: liveness probe", sts.Name, c.Name)
	}
	assert.ElementsMatch(t, []string{"redis", "sentinel"}, containers)

	scripts := ""
	for _, cm := range own.configMaps {
		for _, v := range cm.Data {
			scripts += v + "\n"
		}
	}
	m := regexp.MustCompile(`(?m)^sentinel monitor (\S+) \$\{primary\} 6379 (\d+)$`).FindStringSubmatch(scripts)
	require.NotNil(t, m, "no sentinel monitor line in the scripts")
	master := m[1]
	assert.Equal(t, strconv.Itoa(replicas/2+1), m[2], "quorum: a majority of the %d sentinels", replicas)
	for _, want := range []string{
		"sentinel down-after-milliseconds " + master + " 1000\n", "sentinel failover-timeout " + master + " 10000\n",
		"sentinel parallel-syncs " + master + " 1\n", "sentinel resolve-hostnames yes\n", "sentinel announce-hostnames yes\n",
		"--appendonly yes --appendfsync everysec", "--replica-serve-stale-data yes", "--replica-announce-ip",
		"get-master-addr-by-name " + master,
	} {
		assert.Contains(t, scripts, want)
	}
	var ordinals []string
	for i := 0; i < replicas; i++ {
		ordinals = append(ordinals, strconv.Itoa(i))
	}
	assert.Contains(t, scripts, "for i in "+strings.Join(ordinals, " ")+"; do", "find-primary.sh asks every pod of the StatefulSet")

	// The kustomization's namespace is where the pods' names resolve.
	data, err := os.ReadFile(filepath.Join(k8sDir, "kustomization.yaml"))
	require.NoError(t, err)
	var k kustomization
	require.NoError(t, sigsyaml.UnmarshalStrict(data, &k))
	var addrs []string
	for i := 0; i < replicas; i++ {
		addrs = append(addrs, fmt.Sprintf("%s-%d.%s.%s.svc.cluster.local:26379", sts.Name, i, svc.Name, k.Namespace))
	}
	cfg := o.configMaps["popup-config"]
	require.NotNil(t, cfg)
	assert.Equal(t, strings.Join(addrs, ","), cfg.Data["POPUP_REDIS_ADDR"], "POPUP_REDIS_ADDR: the sentinels of every pod")
	assert.Equal(t, master, cfg.Data["POPUP_REDIS_MASTER_NAME"], "POPUP_REDIS_MASTER_NAME: the name the sentinels monitor")
	assertAckReplicas(t, redisHADir, cfg.Data["POPUP_REDIS_ACK_REPLICAS"], replicas-1)
	assert.Equal(t, "0", cfg.Data["POPUP_QUEUE_SHARDS"], "automatic: one shard with Sentinel")
}

func TestKubernetesRedisClusterComponent(t *testing.T) {
	t.Parallel()
	o, own, patches := loadComponent(t, redisClusterDir)
	checkSelectorsAndReferences(t, o)
	checkPatchEnv(t, redisClusterDir, patches)
	assert.Empty(t, own.podSpecs(), "the cluster itself is yours (an operator, a managed service)")

	cfg := o.configMaps["popup-config"]
	require.NotNil(t, cfg)
	assert.GreaterOrEqual(t, len(strings.Split(cfg.Data["POPUP_REDIS_ADDR"], ",")), 2, "several seeds mean a cluster")
	assert.NotContains(t, patches["popup-config"].Data, "POPUP_REDIS_MASTER_NAME", "a master name means sentinels")
	assert.Equal(t, "1s", cfg.Data["POPUP_REDIS_CLUSTER_RELOAD"])
	assert.Equal(t, "1", cfg.Data["POPUP_REDIS_ACK_REPLICAS"])
	assert.Equal(t, "16", cfg.Data["POPUP_QUEUE_SHARDS"])

	conf := ""
	for _, cm := range own.configMaps {
		conf += cm.Data["redis.conf"]
	}
	for _, want := range []string{"cluster-enabled yes", "cluster-node-timeout 1000", "cluster-require-full-coverage no",
		"cluster-allow-reads-when-down no", "appendonly yes", "appendfsync everysec"} {
		assert.Regexp(t, "(?m)^"+regexp.QuoteMeta(want)+"$", conf)
	}
}

func hasNamedPort(c corev1.Container, name, port string) bool {
	for _, p := range c.Ports {
		if p.Name == name && strconv.Itoa(int(p.ContainerPort)) == port {
			return true
		}
	}
	return false
}

// --------------------------------------------------------------------------- compose ---

// composeService is the part of a compose service these checks read (decoded leniently; the
// keys themselves are checked against the Compose specification's list).
type composeService struct {
	Image string `json:"image"`
	Build *struct {
		Context    string `json:"context"`
		Dockerfile string `json:"dockerfile"`
		Target     string `json:"target"`
	} `json:"build"`
	Command     []string                              `json:"command"`
	Environment map[string]string                     `json:"environment"`
	DependsOn   map[string]struct{ Condition string } `json:"depends_on"`
	Healthcheck *struct {
		Test []string `json:"test"`
	} `json:"healthcheck"`
	Profiles []string       `json:"profiles"`
	Ports    []string       `json:"ports"`
	Sysctls  map[string]any `json:"sysctls"`
	Volumes  []string       `json:"volumes"`
}

type composeFile struct {
	Services map[string]composeService `json:"services"`
	Volumes  map[string]any            `json:"volumes"`
}

// Keys of the Compose specification (top level and service level).
var (
	composeTopKeys     = setOf("version", "name", "include", "services", "networks", "volumes", "secrets", "configs", "models")
	composeServiceKeys = setOf("annotations", "attach", "blkio_config", "build", "cap_add", "cap_drop", "cgroup",
		"cgroup_parent", "command", "configs", "container_name", "cpu_count", "cpu_percent", "cpu_period", "cpu_quota",
		"cpu_rt_period", "cpu_rt_runtime", "cpu_shares", "cpus", "cpuset", "credential_spec", "depends_on", "deploy",
		"develop", "device_cgroup_rules", "devices", "dns", "dns_opt", "dns_search", "domainname", "entrypoint",
		"env_file", "environment", "expose", "extends", "external_links", "extra_hosts", "gpus", "group_add",
		"healthcheck", "hostname", "image", "init", "ipc", "isolation", "label_file", "labels", "links", "logging",
		"mac_address", "mem_limit", "mem_reservation", "mem_swappiness", "memswap_limit", "models", "network_mode",
		"networks", "oom_kill_disable", "oom_score_adj", "pid", "pids_limit", "platform", "ports", "post_start",
		"pre_stop", "privileged", "profiles", "provider", "pull_policy", "read_only", "restart", "runtime", "scale",
		"secrets", "security_opt", "shm_size", "stdin_open", "stop_grace_period", "stop_signal", "storage_opt",
		"sysctls", "tmpfs", "tty", "ulimits", "use_api_socket", "user", "userns_mode", "uts", "volumes",
		"volumes_from", "working_dir")
	dependsConditions = setOf("service_started", "service_healthy", "service_completed_successfully")
)

func loadCompose(t *testing.T) (composeFile, map[string]any) {
	t.Helper()
	return loadComposeFiles(t, composePath)
}

// loadComposeFiles reads compose files as `docker compose -f A -f B` does: each later file is
// merged onto the earlier ones (mappings merge key by key; command, entrypoint and
// healthcheck.test are replaced; other sequences are appended).
func loadComposeFiles(t *testing.T, paths ...string) (composeFile, map[string]any) {
	t.Helper()
	var raw map[string]any
	for _, path := range paths {
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		js, err := sigsyaml.YAMLToJSONStrict(data)
		require.NoError(t, err, path)
		var one map[string]any
		require.NoError(t, json.Unmarshal(js, &one), path)
		if raw == nil {
			raw = one
		} else {
			raw = mergeCompose(raw, one, "").(map[string]any)
		}
	}
	js, err := json.Marshal(raw)
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, json.Unmarshal(js, &c), "compose file does not fit the shapes this test reads (lists for command, maps for environment and depends_on)")
	return c, raw
}

func mergeCompose(dst, src any, key string) any {
	if dm, ok := dst.(map[string]any); ok {
		if sm, ok := src.(map[string]any); ok {
			out := make(map[string]any, len(dm)+len(sm))
			for k, v := range dm {
				out[k] = v
			}
			for k, v := range sm {
				if old, ok := out[k]; ok {
					out[k] = mergeCompose(old, v, k)
				} else {
					out[k] = v
				}
			}
			return out
		}
	}
	if dl, ok := dst.([]any); ok {
		if sl, ok := src.([]any); ok && key != "command" && key != "entrypoint" && key != "test" {
			return append(slices.Clone(dl), sl...)
		}
	}
	return src
}

func TestComposeStructure(t *testing.T) {
	t.Parallel()
	c, raw := loadCompose(t)
	checkComposeStructure(t, c, raw)
	for _, name := range []string{"db", "redis", "migrate", "api", "worker", "locust-master", "locust-worker"} {
		require.Contains(t, c.Services, name)
	}
	for _, name := range []string{"db", "redis", "api", "worker"} {
		assert.NotNil(t, c.Services[name].Healthcheck, "service %s has no healthcheck", name)
	}
	assert.Equal(t, "service_healthy", c.Services["migrate"].DependsOn["db"].Condition)
	for _, name := range []string{"api", "worker"} {
		assert.Equal(t, "service_completed_successfully", c.Services[name].DependsOn["migrate"].Condition, name)
	}
	redis := strings.Join(c.Services["redis"].Command, " ")
	assert.Contains(t, redis, "--appendonly yes")
	assert.Contains(t, redis, "--appendfsync everysec")
}

// checkComposeStructure: keys of the Compose specification, images or builds, depends_on
// targets and conditions, named volumes, build targets.
func checkComposeStructure(t *testing.T, c composeFile, raw map[string]any) {
	t.Helper()
	for key := range raw {
		assert.True(t, composeTopKeys[key] || strings.HasPrefix(key, "x-"), "unknown top-level key %q", key)
	}
	services := raw["services"].(map[string]any)
	for name, s := range services {
		for key := range s.(map[string]any) {
			assert.True(t, composeServiceKeys[key] || strings.HasPrefix(key, "x-"), "service %s: unknown key %q", name, key)
		}
	}
	stages := dockerStages(t)
	for name, s := range c.Services {
		assert.True(t, s.Image != "" || s.Build != nil, "service %s has neither image nor build", name)
		for dep, d := range s.DependsOn {
			target, ok := c.Services[dep]
			if !assert.True(t, ok, "service %s depends on a missing service %s", name, dep) {
				continue
			}
			assert.True(t, dependsConditions[d.Condition], "service %s: depends_on %s condition %q", name, dep, d.Condition)
			if d.Condition == "service_healthy" {
				assert.NotNil(t, target.Healthcheck, "service %s waits for %s to be healthy, which has no healthcheck", name, dep)
			}
			if len(s.Profiles) == 0 {
				assert.Empty(t, target.Profiles, "service %s (always on) depends on %s, which only runs in profiles %v", name, dep, target.Profiles)
			}
		}
		for _, v := range s.Volumes {
			src, _, found := strings.Cut(v, ":")
			if found && !strings.HasPrefix(src, ".") && !strings.HasPrefix(src, "/") && !strings.HasPrefix(src, "~") {
				assert.Contains(t, c.Volumes, src, "service %s uses an undeclared named volume", name)
			}
		}
		if s.Build != nil {
			ctx := filepath.Join(filepath.Dir(composePath), s.Build.Context)
			df := filepath.Join(ctx, s.Build.Dockerfile)
			same, err := sameFile(df, dockerfile)
			require.NoError(t, err, "service %s: build.dockerfile %s", name, df)
			assert.True(t, same, "service %s builds %s, expected deploy/Dockerfile", name, df)
			assert.Contains(t, stages, s.Build.Target, "service %s: build target %q is not a stage of deploy/Dockerfile", name, s.Build.Target)
		}
	}
}

func TestComposeCommandsAndEnvironment(t *testing.T) {
	t.Parallel()
	c, _ := loadCompose(t)
	vars := configDocVars(t)
	bins := dockerfileBinaries(t)
	tests := []struct {
		service string
		command []string
	}{
		{"migrate", []string{"/usr/local/bin/popup-worker", "migrate"}},
		{"api", []string{"/usr/local/bin/popup-api"}},
		{"worker", []string{"/usr/local/bin/popup-worker", "run"}},
	}
	for _, tt := range tests {
		s := c.Services[tt.service]
		assert.Equal(t, tt.command, s.Command, tt.service)
		assert.Contains(t, bins, s.Command[0], tt.service)
		for key := range s.Environment {
			if isGoRuntimeVar(key) {
				continue
			}
			assert.Contains(t, vars, key, "service %s: %s is not in docs/CONFIGURATION.md's table", tt.service, key)
		}
		if s.Healthcheck != nil && len(s.Healthcheck.Test) > 1 && s.Healthcheck.Test[0] == "CMD" {
			assert.Contains(t, bins, s.Healthcheck.Test[1], "service %s: the healthcheck runs a binary the image does not ship", tt.service)
		}
	}
	for _, name := range []string{"locust-master", "locust-worker"} {
		for key := range c.Services[name].Environment {
			_, isConfig := vars[key]
			assert.True(t, isConfig || isLoadtestVar(key), "service %s: %s is neither a config variable nor a load-test one", name, key)
		}
	}
	api := c.Services["api"]
	for _, variable := range []string{"POPUP_HTTP_ADDR", "POPUP_ADMIN_ADDR"} {
		_, port, err := net.SplitHostPort(api.Environment[variable])
		require.NoError(t, err, variable)
		assert.True(t, slices.ContainsFunc(api.Ports, func(p string) bool { return strings.HasSuffix(p, ":"+port) }),
			"api publishes no port for %s (%s)", variable, port)
	}
}

func TestComposeSysctlsAreTheNetnsKeysOfTheProfiles(t *testing.T) {
	t.Parallel()
	c, _ := loadCompose(t)
	tests := []struct {
		service, profile string
	}{
		{"api", "api-host"},
		{"locust-worker", "loadgen-host"},
	}
	for _, tt := range tests {
		want := map[string]string{}
		values := profileValues(t, tt.profile)
		for _, k := range profileKeys(t, tt.profile) {
			// A container may set network-namespace keys only; a global one fails the start.
			if k.scope == "netns" {
				want[k.name] = values[k.name]
			}
		}
		got := map[string]string{}
		for k, v := range c.Services[tt.service].Sysctls {
			got[k] = normSpace(fmt.Sprint(v))
		}
		assert.Equal(t, want, got, "service %s sysctls vs the netns keys of sysctl/%s.conf", tt.service, tt.profile)
	}
}

func TestComposeHAOverride(t *testing.T) {
	t.Parallel()
	// The override alone: only keys of the specification.
	_, own := loadComposeFiles(t, composeHAPath)
	for key := range own {
		assert.True(t, composeTopKeys[key] || strings.HasPrefix(key, "x-"), "%s: unknown top-level key %q", composeHAPath, key)
	}
	// Merged onto docker-compose.yml, as `docker compose -f ... -f ...` runs it.
	c, raw := loadComposeFiles(t, composePath, composeHAPath)
	checkComposeStructure(t, c, raw)
	vars := configDocVars(t)
	for _, name := range []string{"migrate", "api", "worker"} {
		for key := range c.Services[name].Environment {
			assert.True(t, isGoRuntimeVar(key) || hasKey(vars, key), "service %s: %s is not in docs/CONFIGURATION.md's table", name, key)
		}
	}

	var sentinels, replicas []string
	masterName := ""
	for _, name := range sortedKeys(c.Services) {
		s := c.Services[name]
		cmd := strings.Join(s.Command, " ")
		switch {
		case strings.Contains(cmd, "--sentinel"):
			sentinels = append(sentinels, name)
			for _, want := range []string{"port 26379", "sentinel resolve-hostnames yes", "sentinel announce-hostnames yes"} {
				assert.Contains(t, cmd, want, "sentinel %s", name)
			}
			m := regexp.MustCompile(`sentinel monitor (\S+) redis 6379 (\d+)`).FindStringSubmatch(cmd)
			if !assert.NotNil(t, m, "sentinel %s monitors no master at redis:6379", name) {
				continue
			}
			assert.True(t, masterName == "" || masterName == m[1], "sentinels monitor different master names")
			masterName = m[1]
			assert.Equal(t, "2", m[2], "sentinel %s: quorum of 3 sentinels", name)
			for _, want := range []string{"down-after-milliseconds", "failover-timeout", "parallel-syncs"} {
				assert.Contains(t, cmd, "sentinel "+want+" "+m[1]+" ", "sentinel %s", name)
			}
			assert.Contains(t, cmd, "sentinel down-after-milliseconds "+m[1]+" 1000\n", "sentinel %s", name)
			assert.Contains(t, cmd, "sentinel failover-timeout "+m[1]+" 10000\n", "sentinel %s", name)
			assert.Contains(t, cmd, "sentinel parallel-syncs "+m[1]+" 1\n", "sentinel %s", name)
			assert.NotNil(t, s.Healthcheck, "sentinel %s has no healthcheck", name)
		case strings.Contains(cmd, "--replicaof"):
			replicas = append(replicas, name)
			assert.Contains(t, cmd, "--replicaof redis 6379", "replica %s", name)
		}
		if strings.Contains(cmd, "redis-server") && !strings.Contains(cmd, "--sentinel") {
			for _, want := range []string{"--appendonly yes", "--appendfsync everysec", "--replica-serve-stale-data yes", "--replica-announce-ip"} {
				assert.Contains(t, cmd, want, "redis node %s", name)
			}
			assert.NotNil(t, s.Healthcheck, "redis node %s has no healthcheck", name)
		}
	}
	assert.Len(t, sentinels, 3, "3 sentinels")
	assert.Len(t, replicas, 2, "2 replicas, so that POPUP_REDIS_ACK_REPLICAS=1 survives one replica's loss")

	var addrs []string
	for _, s := range sentinels {
		addrs = append(addrs, s+":26379")
	}
	for _, name := range []string{"api", "worker"} {
		env := c.Services[name].Environment
		assert.Equal(t, strings.Join(addrs, ","), env["POPUP_REDIS_ADDR"], "service %s: POPUP_REDIS_ADDR lists the sentinels", name)
		assert.Equal(t, masterName, env["POPUP_REDIS_MASTER_NAME"], "service %s: the sentinels' master name", name)
		assertAckReplicas(t, "service "+name, env["POPUP_REDIS_ACK_REPLICAS"], len(replicas))
		assert.Equal(t, "0", env["POPUP_QUEUE_SHARDS"], "service %s: automatic, one shard with Sentinel", name)
		for _, s := range sentinels {
			assert.Equal(t, "service_healthy", c.Services[name].DependsOn[s].Condition, "service %s waits for %s", name, s)
		}
	}
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }

// assertAckReplicas: POPUP_REDIS_ACK_REPLICAS is at least 1 and below the replica count, so that
// losing one replica does not stop the acknowledgements.
func assertAckReplicas(t *testing.T, where, value string, replicas int) {
	t.Helper()
	n, err := strconv.Atoi(value)
	if !assert.NoError(t, err, "%s: POPUP_REDIS_ACK_REPLICAS %q", where, value) {
		return
	}
	assert.GreaterOrEqual(t, n, 1, "%s: POPUP_REDIS_ACK_REPLICAS", where)
	assert.Less(t, n, replicas, "%s: POPUP_REDIS_ACK_REPLICAS=%d needs more than %d replicas to survive one replica's loss", where, n, replicas)
}

// ------------------------------------------------------------------------ Dockerfile ---

type dockerStage struct {
	name, image string
	lines       []string // instructions of the stage, continuation lines joined
}

func loadDockerfile(t *testing.T) (globalArgs map[string]string, stages []dockerStage) {
	t.Helper()
	data, err := os.ReadFile(dockerfile)
	require.NoError(t, err)
	globalArgs = map[string]string{}
	var joined []string
	var cur strings.Builder
	for _, line := range strings.Split(string(data), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && cur.Len() == 0) {
			continue
		}
		if strings.HasSuffix(trimmed, `\`) {
			cur.WriteString(strings.TrimSuffix(trimmed, `\`) + " ")
			continue
		}
		cur.WriteString(trimmed)
		joined = append(joined, cur.String())
		cur.Reset()
	}
	fromRe := regexp.MustCompile(`(?i)^FROM\s+(?:--platform=\S+\s+)?(\S+)(?:\s+AS\s+(\S+))?$`)
	for _, l := range joined {
		if m := fromRe.FindStringSubmatch(l); m != nil {
			stages = append(stages, dockerStage{name: m[2], image: m[1]})
			continue
		}
		if len(stages) == 0 {
			if rest, ok := strings.CutPrefix(l, "ARG "); ok {
				k, v, _ := strings.Cut(rest, "=")
				globalArgs[k] = v
				continue
			}
			t.Fatalf("Dockerfile: %q before the first FROM", l)
		}
		stages[len(stages)-1].lines = append(stages[len(stages)-1].lines, l)
	}
	require.NotEmpty(t, stages)
	return globalArgs, stages
}

func dockerStages(t *testing.T) map[string]bool {
	_, stages := loadDockerfile(t)
	out := map[string]bool{}
	for _, s := range stages {
		out[s.name] = true
	}
	return out
}

// dockerfileBinaries are the paths the runtime stage ships in /usr/local/bin.
func dockerfileBinaries(t *testing.T) []string {
	_, stages := loadDockerfile(t)
	var out []string
	for _, l := range stages[len(stages)-1].lines {
		if !strings.HasPrefix(l, "COPY ") {
			continue
		}
		f := strings.Fields(l)
		if f[len(f)-1] != "/usr/local/bin/" {
			continue
		}
		for _, src := range f[1 : len(f)-1] {
			if !strings.HasPrefix(src, "--") {
				out = append(out, "/usr/local/bin/"+filepath.Base(src))
			}
		}
	}
	return out
}

func TestDockerfileStages(t *testing.T) {
	t.Parallel()
	args, stages := loadDockerfile(t)
	seen := map[string]bool{}
	for i, s := range stages {
		require.NotEmpty(t, s.name, "stage %d has no name (FROM ... AS name)", i)
		require.False(t, seen[s.name], "stage %s defined twice", s.name)
		for _, l := range s.lines {
			if m := regexp.MustCompile(`--from=(\S+)`).FindStringSubmatch(l); m != nil {
				assert.True(t, seen[m[1]], "stage %s copies from %s, which is not an earlier stage", s.name, m[1])
			}
		}
		seen[s.name] = true
	}

	runtime := stages[len(stages)-1]
	assert.Equal(t, "runtime", runtime.name, "the last stage is the default target: keep it the runtime image")
	assert.Regexp(t, `^gcr\.io/distroless/static-debian\d+:nonroot$`, runtime.image)
	assert.True(t, slices.ContainsFunc(runtime.lines, func(l string) bool { return regexp.MustCompile(`^USER (nonroot|65532)`).MatchString(l) }), "runtime stage: USER nonroot")
	bins := dockerfileBinaries(t)
	for _, b := range []string{"/usr/local/bin/popup-api", "/usr/local/bin/popup-worker", "/usr/local/bin/popup-healthcheck"} {
		assert.Contains(t, bins, b)
	}
	for _, l := range runtime.lines {
		if rest, ok := strings.CutPrefix(l, "ENV "); ok {
			for _, kv := range strings.Fields(rest) {
				k, _, _ := strings.Cut(kv, "=")
				assert.Contains(t, configDocVars(t), k, "runtime ENV %s is not in docs/CONFIGURATION.md's table", k)
			}
		}
	}

	var build dockerStage
	for _, s := range stages {
		if s.name == "build" {
			build = s
		}
	}
	require.NotEmpty(t, build.lines, "no build stage")
	assert.Regexp(t, `^golang:`, build.image)
	text := strings.Join(build.lines, "\n")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", `-ldflags "-s -w"`, "--mount=type=cache,target=/go/pkg/mod",
		"./cmd/popup-api", "./cmd/popup-worker", "./deploy/healthcheck"} {
		assert.Contains(t, text, want, "build stage")
	}
	for _, pkg := range []string{"cmd/popup-api", "cmd/popup-worker", "deploy/healthcheck"} {
		assert.DirExists(t, filepath.Join(repoRoot, pkg))
	}

	// The builder's Go is the go.mod's minor version (a newer patch is fine).
	goMod, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(goMod)
	require.NotNil(t, m)
	assert.Equal(t, string(m[1]), args["GO_VERSION"], "ARG GO_VERSION vs go.mod")
}

func TestDockerfileCopySourcesExistAndAreInTheContext(t *testing.T) {
	t.Parallel()
	_, stages := loadDockerfile(t)
	ignore, err := os.ReadFile(dockerignore)
	require.NoError(t, err)
	var included []string
	for _, l := range strings.Split(string(ignore), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(l), "!"); ok {
			included = append(included, strings.TrimSuffix(p, "/"))
		}
	}
	for _, s := range stages {
		for _, l := range s.lines {
			if !strings.HasPrefix(l, "COPY ") || strings.Contains(l, "--from=") {
				continue
			}
			f := strings.Fields(l)
			for _, src := range f[1 : len(f)-1] {
				if strings.HasPrefix(src, "--") {
					continue
				}
				clean := strings.TrimSuffix(src, "/")
				_, err := os.Stat(filepath.Join(repoRoot, clean))
				assert.NoError(t, err, "stage %s: COPY %s: not in the repository", s.name, src)
				assert.True(t, slices.ContainsFunc(included, func(p string) bool { return clean == p || strings.HasPrefix(clean, p+"/") }),
					"stage %s: COPY %s is excluded by %s", s.name, src, dockerignore)
			}
		}
	}
}

// --------------------------------------------------------------------------- systemd ---

type unitFile map[string]map[string][]string // section → key → values

func parseUnit(t *testing.T, path string) unitFile {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	u := unitFile{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
			u[section] = map[string][]string{}
		default:
			k, v, ok := strings.Cut(line, "=")
			require.True(t, ok, "%s:%d: not key=value: %s", path, n, line)
			require.NotEmpty(t, section, "%s:%d: key outside a section", path, n)
			u[section][strings.TrimSpace(k)] = append(u[section][strings.TrimSpace(k)], strings.TrimSpace(v))
		}
	}
	require.NoError(t, sc.Err())
	return u
}

func (u unitFile) get(section, key string) string {
	v := u[section][key]
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

func TestSystemdUnits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		unit      string
		typ       string
		execStart string
		longLived bool
	}{
		{"popup-api.service", "exec", "/usr/local/bin/popup-api", true},
		{"popup-worker.service", "exec", "/usr/local/bin/popup-worker run", true},
		{"popup-migrate.service", "oneshot", "/usr/local/bin/popup-worker migrate", false},
	}
	for _, tt := range tests {
		t.Run(tt.unit, func(t *testing.T) {
			u := parseUnit(t, filepath.Join(systemdDir, tt.unit))
			for _, s := range []string{"Unit", "Service", "Install"} {
				assert.Contains(t, u, s, "section [%s]", s)
			}
			exec := u.get("Service", "ExecStart")
			assert.Equal(t, tt.execStart, exec)
			assert.True(t, filepath.IsAbs(strings.Fields(exec + " x")[0]), "ExecStart must be an absolute path")
			assert.Equal(t, tt.typ, u.get("Service", "Type"))
			assert.Equal(t, "/etc/popup/popup.env", u.get("Service", "EnvironmentFile"))
			assert.Equal(t, "yes", u.get("Service", "NoNewPrivileges"))
			assert.Contains(t, []string{"strict", "full"}, u.get("Service", "ProtectSystem"))
			assert.Equal(t, "multi-user.target", u.get("Install", "WantedBy"))
			if tt.longLived {
				assert.Equal(t, "on-failure", u.get("Service", "Restart"))
				n, err := strconv.Atoi(u.get("Service", "LimitNOFILE"))
				require.NoError(t, err, "LimitNOFILE must be a number (not infinity: sysctl/README.md)")
				assert.LessOrEqual(t, n, 1048576, "LimitNOFILE above the default fs.nr_open fails the start")
				assert.GreaterOrEqual(t, n, 65536)
				assert.Contains(t, u["Unit"]["After"][0], "popup-migrate.service")
			}
		})
	}
}

// TestGOMEMLIMITNextToEveryMemoryLimit: wherever a deploy file caps a binary's memory, it also
// sets GOMEMLIMIT at 70-90% of the cap (docs/DEPLOY.md), so the collector works harder near the
// cap instead of the process being OOM-killed; and no GOMEMLIMIT without a cap.
func TestGOMEMLIMITNextToEveryMemoryLimit(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, where string, limit int64, goMemLimit string) {
		t.Helper()
		if limit == 0 {
			assert.Empty(t, goMemLimit, "%s: GOMEMLIMIT without a memory limit", where)
			return
		}
		require.NotEmpty(t, goMemLimit, "%s: a memory limit of %d bytes and no GOMEMLIMIT", where, limit)
		n := parseGoBytes(t, goMemLimit)
		ratio := float64(n) / float64(limit)
		assert.True(t, ratio >= 0.7 && ratio <= 0.9, "%s: GOMEMLIMIT %s is %.2f of the memory limit; want about 0.8", where, goMemLimit, ratio)
	}
	o := loadK8s(t)
	for _, ps := range o.podSpecs() {
		for _, c := range ps.spec.Containers {
			if len(c.Command) == 0 || !strings.HasPrefix(c.Command[0], "/usr/local/bin/popup-") || strings.HasPrefix(ps.owner, "Job ") {
				continue
			}
			var env string
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					env = e.Value
				}
			}
			check(t, ps.owner+"/"+c.Name, c.Resources.Limits.Memory().Value(), env)
		}
	}
	c, raw := loadCompose(t)
	for _, name := range []string{"api", "worker"} {
		svc := raw["services"].(map[string]any)[name].(map[string]any)
		var limit int64
		if v, ok := svc["mem_limit"].(string); ok {
			limit = parseUnitBytes(t, v)
		}
		check(t, "compose "+name, limit, c.Services[name].Environment["GOMEMLIMIT"])
	}
	for _, unit := range []string{"popup-api.service", "popup-worker.service"} {
		u := parseUnit(t, filepath.Join(systemdDir, unit))
		var limit int64
		if v := u.get("Service", "MemoryMax"); v != "" {
			limit = parseUnitBytes(t, v)
		}
		var env string
		for _, e := range u["Service"]["Environment"] {
			if v, ok := strings.CutPrefix(e, "GOMEMLIMIT="); ok {
				env = v
			}
		}
		check(t, unit, limit, env)
	}
}

// parseGoBytes reads a GOMEMLIMIT value: a number with B, KiB, MiB, GiB or TiB.
func parseGoBytes(t *testing.T, s string) int64 {
	t.Helper()
	for i, suffix := range []string{"TiB", "GiB", "MiB", "KiB", "B"} {
		if num, ok := strings.CutSuffix(s, suffix); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			require.NoError(t, err, "GOMEMLIMIT %q", s)
			return n << (10 * (4 - i))
		}
	}
	t.Fatalf("GOMEMLIMIT %q: want a number and B, KiB, MiB, GiB or TiB", s)
	return 0
}

// parseUnitBytes reads a systemd MemoryMax= or compose mem_limit value: a number with an
// optional K, M, G (base 1024, either case).
func parseUnitBytes(t *testing.T, s string) int64 {
	t.Helper()
	shift := map[string]int{"k": 10, "m": 20, "g": 30}
	num, unit := s, ""
	if last := strings.ToLower(s[len(s)-1:]); shift[last] > 0 {
		num, unit = s[:len(s)-1], last
	}
	n, err := strconv.ParseInt(num, 10, 64)
	require.NoError(t, err, "memory limit %q", s)
	return n << shift[unit]
}

// TestSystemdUnitsVerify runs systemd-analyze verify where it exists: it knows every directive
// of the installed systemd and reports unknown keys and bad values. The binaries are not
// installed here, so ExecStart is pointed at /bin/true for the check.
func TestSystemdUnitsVerify(t *testing.T) {
	t.Parallel()
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	dir := t.TempDir()
	units, err := filepath.Glob(filepath.Join(systemdDir, "*.service"))
	require.NoError(t, err)
	var paths []string
	for _, src := range units {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		data = regexp.MustCompile(`(?m)^ExecStart=/\S+`).ReplaceAll(data, []byte("ExecStart=/bin/true"))
		dst := filepath.Join(dir, filepath.Base(src))
		require.NoError(t, os.WriteFile(dst, data, 0o644))
		paths = append(paths, dst)
	}
	cmd := exec.Command(tool, append([]string{"verify", "--man=no"}, paths...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	var complaints []string
	for _, line := range strings.Split(out.String(), "\n") {
		if strings.Contains(line, dir) {
			complaints = append(complaints, strings.ReplaceAll(line, dir+"/", "deploy/systemd/"))
		}
	}
	assert.Empty(t, complaints, "systemd-analyze verify")
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		t.Errorf("systemd-analyze verify failed: %v\n%s", err, out.String())
	}
}

func TestEnvExampleMatchesTheConfigurationDoc(t *testing.T) {
	t.Parallel()
	vars := configDocVars(t)
	f, err := os.Open(envExample)
	require.NoError(t, err)
	defer f.Close()
	got := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, "not KEY=VALUE: %s", line)
		require.NotContains(t, got, k, "%s twice", k)
		got[k] = v
	}
	require.NoError(t, sc.Err())
	for k, v := range got {
		def, ok := vars[k]
		if !assert.True(t, ok, "%s is not in docs/CONFIGURATION.md's table", k) {
			continue
		}
		assert.True(t, v == def || strings.Contains(v, "CHANGE-ME"), "%s=%s: use docs/CONFIGURATION.md's default %q, or a CHANGE-ME placeholder", k, v, def)
	}
	for k := range vars {
		assert.Contains(t, got, k, "docs/CONFIGURATION.md documents %s: add it with its default to deploy/systemd/popup.env.example", k)
	}
}

// --------------------------------------------------------------------------- Grafana ---

type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID      int     `json:"id"`
	Type    string  `json:"type"`
	Title   string  `json:"title"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	GridPos *struct{ H, W, X, Y int } `json:"gridPos"`
}

// dashboardMetrics are the metrics the brief asks the dashboard to show (docs/DEPLOY.md).
var dashboardMetrics = []string{
	"popup_http_request_duration_seconds_bucket", "popup_decisions_total", "popup_degraded_responses_total",
	"popup_redis_errors_total", "popup_mysql_errors_total", "popup_snapshot_version",
	"popup_snapshot_built_timestamp_seconds", "popup_queue_length", "popup_queue_oldest_event_age_seconds",
	"popup_queue_processing_length", "popup_queue_dead_letter_length", "popup_worker_batches_total",
	"popup_worker_rows_written_total", "popup_worker_dead_letters_total",
}

func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(dashboardPath)
	require.NoError(t, err)
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(data))
	require.NoError(t, dec.Decode(&d))
	_, err = dec.Token()
	require.ErrorIs(t, err, io.EOF, "trailing data after the dashboard")
	require.NotEmpty(t, d.UID)
	require.NotEmpty(t, d.Title)

	registered := registeredMetrics(t)
	ids := map[int]bool{}
	queried := map[string]bool{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			assert.False(t, ids[p.ID], "panel id %d used twice", p.ID)
			ids[p.ID] = true
			assert.NotEmpty(t, p.Title, "panel %d has no title", p.ID)
			assert.NotNil(t, p.GridPos, "panel %q has no gridPos", p.Title)
			if p.Type != "row" {
				assert.NotEmpty(t, p.Targets, "panel %q queries nothing", p.Title)
			}
			for _, tg := range p.Targets {
				require.NotEmpty(t, tg.Expr, "panel %q target %s", p.Title, tg.RefID)
				assert.Equal(t, strings.Count(tg.Expr, "("), strings.Count(tg.Expr, ")"), "panel %q: unbalanced parentheses in %s", p.Title, tg.Expr)
				names := promqlMetricNames(tg.Expr)
				assert.NotEmpty(t, names, "panel %q: no metric in %s", p.Title, tg.Expr)
				for _, name := range names {
					queried[name] = true
					assert.True(t, strings.HasPrefix(name, "popup_"), "panel %q queries %s: only popup_ metrics", p.Title, name)
					assert.True(t, registered[name] || registered[histogramBase(name)], "panel %q queries %s, which the code does not register", p.Title, name)
				}
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	for _, m := range dashboardMetrics {
		assert.True(t, queried[m], "the dashboard has no panel for %s", m)
	}
}

func TestPromQLMetricNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give string
		want []string
	}{
		{`sum by (route) (rate(popup_a_total{instance=~"$x", status=~"5.."}[$__rate_interval]))`, []string{"popup_a_total"}},
		{`histogram_quantile(0.99, sum by (le, route) (rate(popup_b_bucket[5m])))`, []string{"popup_b_bucket"}},
		{`time() - popup_c_seconds{instance=~"$i"}`, []string{"popup_c_seconds"}},
		{`max(popup_v) - min(popup_v) or vector(0)`, []string{"popup_v"}},
		{`sum(rate(x[1m])) / ignoring (kind) group_left sum(y)`, []string{"x", "y"}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, promqlMetricNames(tt.give), tt.give)
	}
}

var (
	promStrings    = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promMatchers   = regexp.MustCompile(`\{[^{}]*\}`)
	promRanges     = regexp.MustCompile(`\[[^\[\]]*\]`)
	promGrouping   = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promIdentifier = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	promKeywords   = setOf("by", "without", "on", "ignoring", "group_left", "group_right", "bool", "and", "or", "unless", "offset", "atan2", "inf", "nan")
)

// promqlMetricNames returns the metric names a PromQL expression selects (enough PromQL for
// dashboard queries: strings, label matchers, ranges and grouping clauses are dropped first; an
// identifier followed by "(" is a function).
func promqlMetricNames(expr string) []string {
	s := promStrings.ReplaceAllString(expr, `""`)
	s = promMatchers.ReplaceAllString(s, " ")
	s = promRanges.ReplaceAllString(s, " ")
	s = promGrouping.ReplaceAllString(s, " ")
	var out []string
	for _, m := range promIdentifier.FindAllStringSubmatch(s, -1) {
		name := strings.TrimSpace(strings.TrimSuffix(m[0], "("))
		if m[1] != "" || promKeywords[strings.ToLower(name)] || slices.Contains(out, name) {
			continue
		}
		out = append(out, name)
	}
	return out
}

func histogramBase(name string) string {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base
		}
	}
	return name
}

// registeredMetrics are the popup_ metric names the Go code (outside tests) registers.
func registeredMetrics(t *testing.T) map[string]bool {
	t.Helper()
	re := regexp.MustCompile(`(?:Name:\s*|NewDesc\(\s*)"(popup_[a-z0-9_]+)"`)
	out := map[string]bool{}
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range re.FindAllSubmatch(data, -1) {
				out[string(m[1])] = true
			}
			return nil
		})
		require.NoError(t, err)
	}
	require.NotEmpty(t, out, "found no metric registrations in internal/ or cmd/")
	return out
}

// ----------------------------------------------------------------------------- helpers ---

// readmeVars parses docs/CONFIGURATION.md's table: variable → default ("(empty)" → "").
func configDocVars(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(configDocPath)
	require.NoError(t, err)
	re := regexp.MustCompile("(?m)^\\|\\s*`(POPUP_[A-Z0-9_]+)`\\s*\\|\\s*`([^`]*)`\\s*\\|")
	out := map[string]string{}
	for _, m := range re.FindAllStringSubmatch(string(data), -1) {
		def := m[2]
		if def == "(empty)" {
			def = ""
		}
		out[m[1]] = def
	}
	require.GreaterOrEqual(t, len(out), 10, "docs/CONFIGURATION.md's table not found")
	return out
}

type profileKey struct{ name, scope, k8s string }

// profileKeys asks package sysctl (what popup-sysctl keys prints) how it classifies each key of
// a profile, so that deploy/ and sysctl/ share one classification.
func profileKeys(t *testing.T, profile string) []profileKey {
	t.Helper()
	text, ok := sysctl.Profile(profile)
	require.True(t, ok, "no profile %s", profile)
	set, err := sysctl.Parse(profile, text, sysctl.All)
	require.NoError(t, err)
	var keys []profileKey
	for _, s := range set {
		keys = append(keys, profileKey{s.Key, sysctl.Scope(s.Key), sysctl.K8s(s.Key)})
	}
	require.NotEmpty(t, keys)
	return keys
}

// profileValues parses sysctl/PROFILE.conf: key → value with whitespace runs collapsed.
func profileValues(t *testing.T, profile string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "sysctl", profile+".conf"))
	require.NoError(t, err)
	out := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		require.True(t, ok, line)
		out[strings.TrimSpace(k)] = normSpace(v)
	}
	return out
}

// k8sSafeSysctlsFromReadme reads the bullet list under sysctl/README.md's
// `**Kubernetes "safe" sysctls**` paragraph.
func k8sSafeSysctlsFromReadme(t *testing.T) map[string]bool {
	t.Helper()
	data, err := os.ReadFile(sysctlReadme)
	require.NoError(t, err)
	text := string(data)
	start := strings.Index(text, `**Kubernetes "safe" sysctls**`)
	require.GreaterOrEqual(t, start, 0, "safe-sysctl list not found in sysctl/README.md")
	out := map[string]bool{}
	inList := false
	name := regexp.MustCompile("`((?:net|kernel)\\.[a-z0-9_.]+)`")
	for _, line := range strings.Split(text[start:], "\n")[1:] {
		switch {
		case strings.HasPrefix(line, "* "):
			inList = true
		case inList && strings.HasPrefix(line, "  "):
		case inList:
			require.GreaterOrEqual(t, len(out), 5, "too few safe sysctls parsed from sysctl/README.md")
			return out
		default:
			continue
		}
		for _, m := range name.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	t.Fatal("safe-sysctl list in sysctl/README.md has no end")
	return nil
}

// yamlDocs splits a file into its YAML documents, skipping empty ones.
func yamlDocs(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	r := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		require.NoError(t, err, path)
		if !onlyComments(doc) {
			docs = append(docs, doc)
		}
	}
}

func onlyComments(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

func imageName(image string) string {
	if i := strings.LastIndex(image, ":"); i > strings.LastIndex(image, "/") {
		return image[:i]
	}
	return image
}

func parseSeconds(t *testing.T, d string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(strings.TrimSuffix(d, "s"), 10, 64)
	require.NoError(t, err, "expected a whole number of seconds like 15s, got %q", d)
	return n
}

func sameFile(a, b string) (bool, error) {
	sa, err := os.Stat(a)
	if err != nil {
		return false, err
	}
	sb, err := os.Stat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(sa, sb), nil
}

func normSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func ptrTrue(b *bool) bool { return b != nil && *b }

func setOf(items ...string) map[string]bool {
	out := make(map[string]bool, len(items))
	for _, i := range items {
		out[i] = true
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
