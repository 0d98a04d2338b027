package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/09-node/node"
)

// minikube's files, where minikube keeps them (pkg/minikube/localpath): $MINIKUBE_HOME/.minikube
// (or $MINIKUBE_HOME itself when it ends in .minikube), else ~/.minikube; the node's machine
// directory under machines/, the profile's configuration and client certificate under
// profiles/, the cluster's CA as ca.crt.
type paths struct{ home string }

func minikubePaths() (paths, error) {
	if h := os.Getenv("MINIKUBE_HOME"); h != "" {
		if filepath.Base(h) == ".minikube" {
			return paths{h}, nil
		}
		return paths{filepath.Join(h, ".minikube")}, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return paths{}, err
	}
	return paths{filepath.Join(home, ".minikube")}, nil
}

func (p paths) machine(profile string) string { return filepath.Join(p.home, "machines", profile) }
func (p paths) profile(profile string) string { return filepath.Join(p.home, "profiles", profile) }
func (p paths) ca() string                    { return filepath.Join(p.home, "ca.crt") }

// profileConfig is what `minikube start` remembers of a profile (profiles/NAME/config.json).
type profileConfig struct {
	Name              string           `json:"Name"`
	KubernetesVersion string           `json:"KubernetesVersion"`
	ExtraConfig       node.ExtraConfig `json:"ExtraOptions"`
	NodeIP            string           `json:"NodeIP"`
}

func (p paths) readProfile(name string) (*profileConfig, error) {
	data, err := os.ReadFile(filepath.Join(p.profile(name), "config.json"))
	if err != nil {
		return nil, err
	}
	var c profileConfig
	return &c, json.Unmarshal(data, &c)
}

func (p paths) writeProfile(c *profileConfig) error {
	if err := os.MkdirAll(p.profile(c.Name), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(p.profile(c.Name), "config.json"), data, 0o644)
}

// kubeconfigPath is where minikube writes: the first file of $KUBECONFIG, else ~/.kube/config
// (pkg/minikube/kubeconfig, PathFromEnv).
func kubeconfigPath() (string, error) {
	if env := os.Getenv("KUBECONFIG"); env != "" {
		for _, p := range filepath.SplitList(env) {
			if p != "" {
				return p, nil
			}
		}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".kube", "config"), nil
}

// extension is what minikube adds to its cluster and context entries (kubeconfig/extension.go).
type extension struct {
	LastUpdate string `json:"last-update"`
	Provider   string `json:"provider"`
	Version    string `json:"version"`
}

func (e *extension) DeepCopyObject() runtime.Object   { c := *e; return &c }
func (e *extension) GetObjectKind() schema.ObjectKind { return schema.EmptyObjectKind }

// updateKubeconfig merges the node's admin credentials into the user's kubeconfig as minikube
// does: the CA in ca.crt, the client certificate in the profile, cluster, context and user named
// after the profile, the context made current.
func (p paths) updateKubeconfig(name string, admin *clientcmdapi.Config, version string) (string, error) {
	path, err := kubeconfigPath()
	if err != nil {
		return "", err
	}
	cluster, user := admin.Clusters[name], admin.AuthInfos[name]
	if err := os.MkdirAll(p.profile(name), 0o755); err != nil {
		return "", err
	}
	files := map[string][]byte{p.ca(): cluster.CertificateAuthorityData,
		filepath.Join(p.profile(name), "client.crt"): user.ClientCertificateData,
		filepath.Join(p.profile(name), "client.key"): user.ClientKeyData}
	for f, data := range files {
		mode := os.FileMode(0o644)
		if filepath.Ext(f) == ".key" {
			mode = 0o600
		}
		if err := os.WriteFile(f, data, mode); err != nil {
			return "", err
		}
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		cfg, err = clientcmdapi.NewConfig(), nil
	}
	if err != nil {
		return "", fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	ext := &extension{LastUpdate: time.Now().UTC().Format(time.RFC1123), Provider: "minikube.sigs.k8s.io", Version: version}
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: cluster.Server, CertificateAuthority: p.ca(),
		Extensions: map[string]runtime.Object{"cluster_info": ext}}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(p.profile(name), "client.crt"),
		ClientKey: filepath.Join(p.profile(name), "client.key")}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: "default",
		Extensions: map[string]runtime.Object{"context_info": ext}}
	cfg.CurrentContext = name
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	return path, clientcmd.WriteToFile(*cfg, path)
}

// removeFromKubeconfig drops the profile's cluster, context and user (kubeconfig.DeleteContext).
func removeFromKubeconfig(name string) error {
	path, err := kubeconfigPath()
	if err != nil {
		return err
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	delete(cfg.Clusters, name)
	delete(cfg.AuthInfos, name)
	delete(cfg.Contexts, name)
	if cfg.CurrentContext == name {
		cfg.CurrentContext = ""
	}
	return clientcmd.WriteToFile(*cfg, path)
}
