package gateway

import "time"

// What the tests of package gateway_test reach inside.

// SetJoinWait sets how long s's job streams wait for the projector.
func SetJoinWait(s *Server, d time.Duration) { s.joinWait = d }

// Subscribers counts f's subscriptions.
func (f *Fanout) Subscribers() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.subs)
}
