package queue

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
)

// ClusterOptions make an embedded broker one node of a NATS cluster of
// brokers (JetStream clustered: every stream and bucket of the queue has
// clusterReplicas copies, on as many nodes, so that losing one node loses
// nothing and stops nothing). The zero value: a single broker.
type ClusterOptions struct {
	// Name is the node's server name, unique in the cluster (the name a
	// stream's Cluster.Leader reports).
	Name string
	// Listen is the address (host:port) on which the node takes the
	// other nodes' routes; empty: not clustered.
	Listen string
	// Routes are the route URLs (nats-route://host:port or host:port) of
	// the other nodes; this node's own may be among them (one list for
	// every node). A cluster has at least clusterReplicas nodes: at least
	// two routes.
	Routes []string
	// ClusterName names the cluster; every node must have the same
	// (empty: "rawbatch").
	ClusterName string
}

// clusterReplicas is the number of copies of each stream and bucket of
// the queue on a cluster: three, so that one node of three (or more) may
// be lost while the other two keep a quorum.
const clusterReplicas = 3

// defaultClusterName is the cluster's name when ClusterOptions gives none.
const defaultClusterName = "rawbatch"

// clustered reports whether o asks for a cluster node.
func (o ClusterOptions) clustered() bool {
	return o.Listen != "" || len(o.Routes) > 0 || o.Name != ""
}

// applyCluster sets the cluster part of the server's options from o: the
// server name, the cluster's name and route address, and the routes.
func applyCluster(opts *server.Options, o ClusterOptions) error {
	if !o.clustered() {
		return nil
	}
	if o.Name == "" {
		return errors.New("queue: broker cluster: no node name (each node needs one of its own)")
	}
	if strings.ContainsAny(o.Name, " \t\n.*>") {
		return fmt.Errorf("queue: broker cluster: node name %q: no spaces, dots, * or >", o.Name)
	}
	if o.Listen == "" {
		return fmt.Errorf("queue: broker cluster node %s: no cluster address (host:port the other nodes route to)", o.Name)
	}
	host, port, err := hostPort(o.Listen, "127.0.0.1", 6222)
	if err != nil {
		return fmt.Errorf("queue: broker cluster address %q: %w", o.Listen, err)
	}
	var routes []*url.URL
	for _, r := range o.Routes {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !strings.Contains(r, "://") {
			r = "nats-route://" + r
		}
		u, err := url.Parse(r)
		if err != nil || u.Host == "" {
			return fmt.Errorf("queue: broker cluster route %q: not a route URL (nats-route://host:port)", r)
		}
		routes = append(routes, u)
	}
	if len(routes) < clusterReplicas-1 {
		return fmt.Errorf("queue: broker cluster node %s: %d route(s); a cluster has %d nodes or more: give the routes of the other nodes", o.Name, len(routes), clusterReplicas)
	}
	name := o.ClusterName
	if name == "" {
		name = defaultClusterName
	}
	opts.ServerName = o.Name
	opts.Cluster.Name = name
	opts.Cluster.Host, opts.Cluster.Port = host, port
	opts.Routes = routes
	return nil
}

// replicas is the number of copies of each stream and bucket the client
// creates: clusterReplicas when the server it is connected to is a node
// of a cluster (its INFO names one), 1 on a single server. One answer
// for every stream and bucket of the queue.
func (c *Client) replicas() int {
	if c.nc.ConnectedClusterName() != "" {
		return clusterReplicas
	}
	return 1
}
