package agent

// Announced says how many of the agent's hosts have been announced
// (AgentConnected sent since the agent last reached the brokers), of how
// many it serves: an agent is ready once every host is announced.
func (a *Agent) Announced() (announced, hosts int) {
	for _, h := range a.hosts {
		if h.connected.Load() {
			announced++
		}
	}
	return announced, len(a.hosts)
}
