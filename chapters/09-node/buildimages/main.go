// Command buildimages writes the node's container images (package nodeimages) as docker
// archives, one per image, and prints one line per image: its name, its archive, its size, and
// whether it was built or already up to date. `make node-images` runs it with the versions of
// the Makefile:
//
//	make node-images
//	go run ./chapters/09-node/buildimages --binaries .bin/node/images --library-root .bin/node/rootfs \
//	  --out .bin/node/image-archives --kubernetes-version v1.37.2 --etcd-version 3.7.0-0 \
//	  --coredns-version v1.14.6 --pause-version 3.10.2
package main

import (
	"context"
	"os"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/support/program"
)

func main() {
	os.Exit(program.Run(NewCommand(context.Background())))
}
