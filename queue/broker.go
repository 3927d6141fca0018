package queue

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// hostPort splits addr ("host:port", ":port" or "host"; port 0: any free
// one) into the server's host and port (-1: a random port).
func hostPort(addr, defHost string, defPort int) (string, int, error) {
	if addr == "" {
		return defHost, defPort, nil
	}
	host, ps, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, defPort, nil // a bare host
	}
	if host == "" {
		host = defHost
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q: not a port number", ps)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

func startBroker(o BrokerOptions) (*Broker, error) {
	if o.Store == "" {
		return nil, errors.New("queue: broker: no store directory")
	}
	if err := os.MkdirAll(o.Store, 0o755); err != nil {
		return nil, fmt.Errorf("queue: broker store: %w", err)
	}
	host, port, err := hostPort(o.Listen, "127.0.0.1", 4222)
	if err != nil {
		return nil, fmt.Errorf("queue: broker listen address %q: %w", o.Listen, err)
	}
	opts := &server.Options{
		ServerName: "rawbatch",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   o.Store,
		SyncAlways: true, // fsync on every write: an acked job survives kill -9
		NoSigs:     true,
		NoLog:      true,
		MaxPayload: 8 << 20,
	}
	if err := applyCluster(opts, o.Cluster); err != nil {
		return nil, err
	}
	if o.Monitor != "" {
		h, p, err := hostPort(o.Monitor, "127.0.0.1", 8222)
		if err != nil {
			return nil, fmt.Errorf("queue: broker monitor address %q: %w", o.Monitor, err)
		}
		opts.HTTPHost, opts.HTTPPort = h, p
	}
	if err := applySecurity(opts, o, host); err != nil {
		return nil, err
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("queue: broker: %w", err)
	}
	srv.Start()
	if !srv.ReadyForConnections(30 * time.Second) {
		srv.Shutdown()
		return nil, fmt.Errorf("queue: broker on %s:%d did not start", host, port)
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		return nil, fmt.Errorf("queue: broker on %s:%d: JetStream did not start (store %s)", host, port, o.Store)
	}
	b := &Broker{srv: srv}
	if err := b.provisionAndListen(o, host, port); err != nil {
		srv.Shutdown()
		return nil, err
	}
	return b, nil
}

func (b *Broker) shutdown() {
	if b == nil || b.srv == nil {
		return
	}
	if b.stopProvision != nil {
		b.stopProvision()
	}
	b.srv.Shutdown()
	b.srv.WaitForShutdown()
}
