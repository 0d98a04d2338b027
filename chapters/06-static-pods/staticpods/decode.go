// Package staticpods is the toy kubelet's static pod source: it reads a directory of pod
// manifests, turns each valid one into the pod the real kubelet would run — same name, UID,
// defaults, validation and refusals — and turns successive directory states into the
// ADD / UPDATE / REMOVE / DELETE / RECONCILE updates that the real PodConfig would send.
//
// It mirrors pkg/kubelet/config (file.go, common.go, config.go) in fewer, plainer lines, and
// calls the kubelet's own helpers for everything that defines a pod's identity: the scheme
// (decoding and defaulting), the hash that makes the UID, the toleration helper, validation and
// the API-reference check. Differential tests run both on the same directories.
package staticpods

import (
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	podutil "k8s.io/kubernetes/pkg/api/pod"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/apis/core/helper"
	_ "k8s.io/kubernetes/pkg/apis/core/install" // registers the core group in legacyscheme
	corev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/validation"
	kubetypes "k8s.io/kubernetes/pkg/kubelet/types"
	"k8s.io/kubernetes/pkg/util/hash"
	utilio "k8s.io/utils/io"
)

// MaxManifestSize is the most a manifest may hold: the kubelet reads at most this many bytes
// and refuses a file that reaches it (pkg/kubelet/config/common.go#L51 (maxConfigLength = 10 * 1 << 20)).
const MaxManifestSize = 10 * 1 << 20

// ErrNotAPod wraps every error that means "these bytes are not a pod manifest" — not YAML or
// JSON, no kind, another kind (a PodList too). The kubelet words it "couldn't parse as pod".
var ErrNotAPod = errors.New("couldn't parse as pod")

// ReadManifest reads one manifest file as the kubelet's file source does
// (pkg/kubelet/config/file.go#L199-L236 (func (s *sourceFile) extractFromFile)).
func ReadManifest(path string, nodeName types.NodeName) (*v1.Pod, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	data, err := utilio.ReadAtMost(f, MaxManifestSize)
	if err != nil {
		if errors.Is(err, utilio.ErrLimitReached) {
			return nil, fmt.Errorf("manifest is %d bytes or more, the kubelet's limit: %w", MaxManifestSize, err)
		}
		return nil, err
	}
	return Decode(data, path, nodeName)
}

// Decode turns the bytes of a manifest into the pod the kubelet runs, in the order of the
// kubelet's tryDecodeSinglePod (pkg/kubelet/config/common.go#L122-L172 (func tryDecodeSinglePod)).
// source is the manifest's path: it is part of the pod's UID.
func Decode(data []byte, source string, nodeName types.NodeName) (*v1.Pod, error) {
	// 1. YAML to JSON. Only the first YAML document is read; JSON passes through.
	json, err := utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAPod, err)
	}
	// 2. Decode into the internal Pod type with the API server's scheme, which also applies
	//    the v1 defaults (restartPolicy, dnsPolicy, terminationMessagePath, …).
	obj, err := runtime.Decode(legacyscheme.Codecs.UniversalDecoder(), json)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotAPod, err)
	}
	pod, ok := obj.(*api.Pod)
	if !ok {
		return nil, fmt.Errorf("%w: the manifest is a %T, not a Pod", ErrNotAPod, obj)
	}
	// 3. A static pod needs a name; generateName is not enough.
	if pod.Name == "" {
		return nil, errors.New("invalid pod: name is needed for the pod")
	}
	// 4. The kubelet's defaults for a pod from a file.
	setDefaults(pod, source, nodeName)
	// 5. The apiserver's own validation for a new pod, after the defaults: the name checked is
	//    the one with the node suffix, and spec.nodeName is set (so schedulingGates are refused).
	opts := podutil.GetValidationOptionsFromPodSpecAndMeta(&pod.Spec, nil, &pod.ObjectMeta, nil)
	if errs := validation.ValidatePodCreate(pod, opts); len(errs) > 0 {
		return nil, fmt.Errorf("invalid pod: %v", errs)
	}
	out := &v1.Pod{}
	if err := corev1.Convert_core_Pod_To_v1_Pod(pod, out, nil); err != nil {
		return nil, err
	}
	// 6. A static pod runs without the apiserver, so it may not depend on API objects:
	//    service accounts, secrets, config maps, claims, … (pkg/api/pod/util.go#L1989-L2059 (func HasAPIObjectReference)).
	_, resource, err := podutil.HasAPIObjectReference(pod)
	if err != nil {
		return nil, err
	}
	if resource != "" {
		return nil, fmt.Errorf("static pods may not reference %s", resource)
	}
	return out, nil
}

// setDefaults is the kubelet's applyDefaults for a file source
// (pkg/kubelet/config/common.go#L66-L111 (func applyDefaults)).
func setDefaults(pod *api.Pod, source string, nodeName types.NodeName) {
	// The UID, unless the manifest sets one, is a hash of the decoded pod (before any of the
	// changes below), the node name and the file's path: the same file on the same node always
	// gives the same UID, and any change to it gives a new one.
	if pod.UID == "" {
		hasher := fnv.New128a()
		hash.DeepHashObject(hasher, pod)
		fmt.Fprintf(hasher, "host:%s", nodeName)
		fmt.Fprintf(hasher, "file:%s", source)
		pod.UID = types.UID(hex.EncodeToString(hasher.Sum(nil)))
	}
	// The name gets the node's name, lower-cased, so that static pods of different nodes differ.
	pod.Name = fmt.Sprintf("%s-%s", pod.Name, strings.ToLower(string(nodeName)))
	if pod.Namespace == "" {
		pod.Namespace = metav1.NamespaceDefault
	}
	// The pod is bound to this node: no scheduler involved.
	pod.Spec.NodeName = string(nodeName)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[kubetypes.ConfigHashAnnotationKey] = string(pod.UID)
	// Static pods tolerate every NoExecute taint: node problems must not evict them.
	helper.AddOrUpdateTolerationInPod(pod, &api.Toleration{Operator: api.TolerationOpExists, Effect: api.TaintEffectNoExecute})
	pod.Status.Phase = api.PodPending
}
