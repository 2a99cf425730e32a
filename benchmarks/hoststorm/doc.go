// Package hoststorm holds the host scenarios of `make bench` (group
// "hosts"), the CloudStack #3820 case: a management server's restart puts
// its KVM agents in Alert beyond some 50–100 hosts. Here thousands of sim
// hosts (the project's own agent over driver/sim, in the harness process)
// connect at once to every processor of ops/roles, run together in a child
// process over an embedded kfake broker; then that child is killed with
// SIGKILL and started again while the agents keep pinging, once at once and
// once after an outage timed so that the last pings it stepped fall due
// while it catches up. A consumer of the committed log (host.status.v1,
// host.events.v1, agent.commands.v1) says when every host is Up and which
// hosts left Up or were investigated after each kill.
//
// It never judges a figure (the harness does) and never edits the code it
// measures.
package hoststorm
