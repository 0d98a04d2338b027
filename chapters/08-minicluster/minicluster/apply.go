package minicluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// Apply creates the objects of YAML files, in order, as `kubectl apply -f` does for new objects:
// the kinds the examples use (namespaces, ServiceAccounts, RBAC, Pods, DaemonSets). An object
// that exists already is left as it is.
func (c *Cluster) Apply(ctx context.Context, files ...string) error {
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		docs := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var raw runtime.RawExtension
			if err := docs.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if len(bytes.TrimSpace(raw.Raw)) == 0 {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(raw.Raw, nil, nil)
			if err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
			if err := c.create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
	}
	return nil
}

func (c *Cluster) create(ctx context.Context, obj runtime.Object) (err error) {
	opts := metav1.CreateOptions{}
	switch o := obj.(type) {
	case *corev1.Namespace:
		_, err = c.Client.CoreV1().Namespaces().Create(ctx, o, opts)
	case *corev1.ServiceAccount:
		_, err = c.Client.CoreV1().ServiceAccounts(o.Namespace).Create(ctx, o, opts)
	case *corev1.Pod:
		_, err = c.Client.CoreV1().Pods(namespaceOr(o.Namespace)).Create(ctx, o, opts)
	case *rbacv1.ClusterRole:
		_, err = c.Client.RbacV1().ClusterRoles().Create(ctx, o, opts)
	case *rbacv1.ClusterRoleBinding:
		_, err = c.Client.RbacV1().ClusterRoleBindings().Create(ctx, o, opts)
	case *appsv1.DaemonSet:
		_, err = c.Client.AppsV1().DaemonSets(namespaceOr(o.Namespace)).Create(ctx, o, opts)
	default:
		err = fmt.Errorf("Apply does not know %T", obj)
	}
	return err
}

func namespaceOr(ns string) string {
	if ns == "" {
		return metav1.NamespaceDefault
	}
	return ns
}
