//go:build race

package sim

// raceOn: the race detector slows a run about tenfold, and a world is one
// goroutine; `make test`'s race pass plays a few seeds, and its own pass
// without the detector plays the quick count.
const raceOn = true
