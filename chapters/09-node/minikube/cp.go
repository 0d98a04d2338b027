package main

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"

	"github.com/spf13/cobra"
)

// remotePath is one side of `minikube cp`: a node's file, or a local one (cmd/minikube/cmd/cp.go,
// newRemotePath): NODE:PATH when there is a colon, the part before it is not empty and has no
// slash, and PATH is absolute.
type remotePath struct {
	node, path string
}

func parseRemotePath(s string) remotePath {
	if node, p, ok := strings.Cut(s, ":"); ok && node != "" && !strings.Contains(node, "/") && strings.HasPrefix(p, "/") {
		return remotePath{node: node, path: p}
	}
	return remotePath{path: s}
}

// cpCommand is `minikube cp SRC DST`: a local file into the node (DST absolute, or NODE:/path),
// written as root with mode 0644 and its directories made, as minikube's `sudo mkdir -p` and
// `sudo scp -t` do; or a node's file out (NODE:/path as SRC).
func (o *options) cpCommand(ctx context.Context) *cobra.Command {
	return &cobra.Command{
		Use:   "cp <source node name>:<source file path> <target node name>:<target file path>",
		Short: "Copy the specified file into minikube",
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) != 2 {
				return usage(`Please specify the path to copy: 
	minikube cp <source file path> <target file absolute path> (example: "minikube cp a/b.txt /copied.txt")`)
			}
			src, dst := parseRemotePath(args[0]), parseRemotePath(args[1])
			if src.node == "" && dst.node == "" && !strings.HasPrefix(dst.path, "/") {
				return usage(`Target %s must be an absolute Path. Relative Path is not allowed (example: "minikube:/home/docker/copied.txt")`, dst.path)
			}
			if src.node == "" && dst.node == "" {
				dst.node = o.profile // to the control-plane node
			}
			for _, p := range []remotePath{src, dst} {
				if p.node != "" && p.node != o.profile {
					return usage("node %s does not exist: this cluster has one node, %s", p.node, o.profile)
				}
			}
			n, err := o.running()
			if err != nil {
				return err
			}
			switch {
			case src.node == "" && dst.node != "":
				f, err := os.Open(src.path)
				if err != nil {
					return &exitError{code: 14, reason: "HOST_PATH_MISSING", msg: fmt.Sprintf("Cannot find directory %s for copy", src.path)}
				}
				defer func() { _ = f.Close() }()
				target := dst.path
				if strings.HasSuffix(target, "/") {
					target += path.Base(src.path)
				}
				c := n.Command(ctx, "sh", "-c", `mkdir -p "$(dirname "$1")" && cat > "$1" && chmod 0644 "$1"`, "sh", target)
				c.Stdin = f
				if out, err := c.CombinedOutput(); err != nil {
					return fmt.Errorf("copy %s to %s:%s: %w: %s", src.path, dst.node, target, err, out)
				}
			case src.node != "" && dst.node == "":
				data, err := n.Output(ctx, "cat", src.path)
				if err != nil {
					return err
				}
				target := dst.path
				if strings.HasSuffix(target, "/") {
					target += path.Base(src.path)
				}
				return os.WriteFile(target, data, 0o644)
			default:
				return usage("copy between two nodes or two local paths: not with one node")
			}
			return nil
		},
	}
}
