package minicluster

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd starts an embedded etcd whose clients and peer URL are unix sockets in dir, so it
// takes no TCP port — as the integration tests' framework runs etcd (test/integration/framework,
// RunCustomEtcd), here in-process with go.etcd.io/etcd/server/v3/embed and fsync left on.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Name = "minicluster"
	cfg.Dir = filepath.Join(dir, "etcd")
	socket := url.URL{Scheme: "unix", Host: filepath.Join(dir, "etcd.sock")}
	// One member: its peer URL is never dialled, but etcd listens on it, plain HTTP, for raft's
	// streams. It listens on a unix socket in dir (0700) rather than a loopback port any local
	// user could reach (chapter 08's --node-ip runs on this machine's network); what it
	// advertises, and so the initial cluster, must be host:port, and leads nowhere, as
	// test/integration/framework advertises its client URL.
	listenPeer := url.URL{Scheme: "unix", Host: filepath.Join(dir, "etcd-peer.sock")}
	peer := url.URL{Scheme: "http", Host: "127.0.0.111:0"}
	cfg.ListenClientUrls = []url.URL{socket}
	cfg.AdvertiseClientUrls = []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	cfg.ListenPeerUrls = []url.URL{listenPeer}
	cfg.AdvertisePeerUrls = []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.EnableGRPCGateway = false
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", fmt.Errorf("start etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", fmt.Errorf("etcd was not ready within a minute")
	}
	return e, "unix://" + socket.Host, nil
}
