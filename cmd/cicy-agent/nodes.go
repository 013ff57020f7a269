package main

import (
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/cicy-ai/cicy-agent/api"
	"github.com/cicy-ai/cicy-agent/cicy/clip"
)

func (e *env) nodesCmd() *cli.Command {
	return &cli.Command{
		Name:  "nodes",
		Usage: "list the supervisors that share this one's database: name, state, address, panes, last heartbeat",
		Description: "Supervisors that share one PostgreSQL database (serve --db) are the nodes of one cluster; each\n" +
			"renews a 30 s lease every 10 s. A node is up when it answers, unreachable when its lease holds\n" +
			"but it does not answer (or has no --listen), lapsed when its lease ran out (stopped or dead).\n" +
			"The node that answered is marked with *. A single machine's supervisor is the one node.",
		Flags:  []cli.Flag{jsonFlag},
		Action: listAction(e, (*api.Client).Nodes, func(w io.Writer, ns []api.NodeInfo) error { return printNodes(w, ns, time.Now()) }),
	}
}

// printNodes is the table of nodes.
func printNodes(w io.Writer, ns []api.NodeInfo, now time.Time) error {
	return printTable(w, "NODE\tSTATE\tADDR\tPANES\tHEARTBEAT\tREASON", ns, func(n api.NodeInfo) string {
		name, addr, beat := n.Name, n.Addr, "-"
		if n.Self {
			name += "*"
		}
		if addr == "" {
			addr = "-"
		}
		if !n.HeartbeatAt.IsZero() {
			beat = fmt.Sprintf("%s ago", now.Sub(n.HeartbeatAt).Round(time.Second))
		}
		return fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s", clip.Runes(name, 24), n.State, addr, n.Panes, beat, clip.Runes(n.Reason, 60))
	})
}
