package minicluster

import (
	"fmt"
	"net/url"
	"path/filepath"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

// startEtcd starts an embedded etcd whose clients connect through a unix socket in dir, so it
// takes no TCP port — as the integration tests' framework runs etcd (test/integration/framework,
// RunCustomEtcd), here in-process with go.etcd.io/etcd/server/v3/embed and fsync left on.
func startEtcd(dir string) (*embed.Etcd, string, error) {
	cfg := embed.NewConfig()
	cfg.Name = "minicluster"
	cfg.Dir = filepath.Join(dir, "etcd")
	socket := url.URL{Scheme: "unix", Host: filepath.Join(dir, "etcd.sock")}
	peer := url.URL{Scheme: "http", Host: "127.0.0.1:0"} // one member: never dialled
	cfg.ListenClientUrls = []url.URL{socket}
	cfg.AdvertiseClientUrls = []url.URL{{Scheme: "http", Host: "127.0.0.1:0"}}
	cfg.ListenPeerUrls = []url.URL{peer}
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
