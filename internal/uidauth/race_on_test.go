//go:build race

package uidauth

// raceOn: the race detector makes sync.Pool drop items at random, so allocation counts vary.
const raceOn = true
