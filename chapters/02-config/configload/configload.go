// Package configload reads a kubelet configuration file the way the kubelet does — the real
// loader, defaulting, flag precedence and validation — so that chapters 02 and 03 can show it.
package configload

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/kubernetes/cmd/kubelet/app/options"
	kubeletconfig "k8s.io/kubernetes/pkg/kubelet/apis/config"
	kubeletconfigconversion "k8s.io/kubernetes/pkg/kubelet/apis/config/v1beta1"
	"k8s.io/kubernetes/pkg/kubelet/apis/config/validation"
	"k8s.io/kubernetes/pkg/kubelet/eviction"
	"k8s.io/kubernetes/pkg/kubelet/kubeletconfig/configfiles"
	utilfs "k8s.io/kubernetes/pkg/util/filesystem"
)

// LoadConfigFile does what the kubelet's unexported function of that name does, step by step
// (cmd/kubelet/app/server.go#L453-L482 (func loadConfigFile)).
func LoadConfigFile(ctx context.Context, name string) (*kubeletconfig.KubeletConfiguration, error) {
	// The path is made absolute against the working directory…
	path, err := filepath.Abs(name)
	if err != nil {
		return nil, err
	}
	// …read by the file-system loader, which decodes strictly first and, if only strictness
	// failed (an unknown or duplicated field), decodes again leniently and logs a warning — a
	// misspelt field does not stop the kubelet. Then the v1beta1 defaults, the conversion to
	// the internal type, and relative paths such as staticPodPath resolved against the file's
	// directory (pkg/kubelet/kubeletconfig/configfiles/configfiles.go#L65-L84 (func (loader *fsLoader) Load)).
	loader, err := configfiles.NewFsLoader(&utilfs.DefaultFs{}, path)
	if err != nil {
		return nil, err
	}
	kc, err := loader.Load(ctx)
	if err != nil {
		return nil, err
	}
	// evictionHard has no default in the file format (its keys depend on the OS); the kubelet
	// fills it here, or merges the defaults in when mergeDefaultEvictionSettings is true.
	if kc.EvictionHard == nil {
		kc.EvictionHard = eviction.DefaultEvictionHard
	} else if kc.MergeDefaultEvictionSettings {
		for k, v := range eviction.DefaultEvictionHard {
			if _, exists := kc.EvictionHard[k]; !exists {
				kc.EvictionHard[k] = v
			}
		}
	}
	return kc, nil
}

// ApplyFlags parses the command line over kc, as kubeletConfigFlagPrecedence does: a flag set
// with every kubelet flag bound to kc, parsed again, so that only the flags given change it.
// Feature gates from the file that the flags do not name are kept.
// Deprecation warnings go to warnings.
func ApplyFlags(kc *kubeletconfig.KubeletConfiguration, args []string, warnings io.Writer) error {
	fs := pflag.NewFlagSet("kubelet", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	fs.SetOutput(warnings)
	options.NewKubeletFlags().AddFlags(fs) // throwaway: node flags do not touch kc
	options.AddKubeletConfigFlags(fs, kc)
	original := kc.FeatureGates
	if err := fs.Parse(args); err != nil {
		return err
	}
	for k, v := range original {
		if _, ok := kc.FeatureGates[k]; !ok {
			kc.FeatureGates[k] = v
		}
	}
	return nil
}

// FlagDefaults is the configuration a kubelet has with no --config at all: the v1beta1
// defaults plus the legacy flag defaults of options.NewKubeletConfiguration
// (cmd/kubelet/app/options/options.go#L197-L210 (func NewKubeletConfiguration)).
func FlagDefaults(args []string) (*kubeletconfig.KubeletConfiguration, error) {
	kc, err := options.NewKubeletConfiguration()
	if err != nil {
		return nil, err
	}
	return kc, ApplyFlags(kc, args, io.Discard)
}

// Validate runs the kubelet's own validation and returns its errors one by one, split into
// errors of the configuration and errors about this host: on Linux the same function also
// refuses a cgroup v1 host while failCgroupV1 is true, its default
// (pkg/kubelet/apis/config/validation/validation_linux.go#L35-L37 (kc.FailCgroupV1 && isCgroup1)).
func Validate(kc *kubeletconfig.KubeletConfiguration) (config, host []error) {
	err := validation.ValidateKubeletConfiguration(kc, utilfeature.DefaultFeatureGate)
	if err == nil {
		return nil, nil
	}
	errs := []error{err}
	if agg, ok := err.(utilerrors.Aggregate); ok {
		errs = agg.Errors()
	}
	for _, e := range errs {
		if strings.Contains(e.Error(), "cgroup v1") {
			host = append(host, e)
		} else {
			config = append(config, e)
		}
	}
	return config, host
}

// AsJSON turns the internal configuration into the file format (v1beta1), as a generic map
// that fields can be read from by their JSON path.
func AsJSON(kc *kubeletconfig.KubeletConfiguration) (map[string]any, error) {
	versioned := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := kubeletconfigconversion.Convert_config_KubeletConfiguration_To_v1beta1_KubeletConfiguration(kc, versioned, nil); err != nil {
		return nil, err
	}
	data, err := json.Marshal(versioned)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

// Field reads a dotted JSON path ("authentication.anonymous.enabled") as display text.
func Field(m map[string]any, path []string) string {
	var v any = m
	for _, p := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return "-"
		}
		if v, ok = obj[p]; !ok {
			return "-"
		}
	}
	switch v := v.(type) {
	case string:
		return v
	case map[string]any, []any:
		data, _ := json.Marshal(v)
		return string(data)
	default:
		return fmt.Sprint(v)
	}
}
