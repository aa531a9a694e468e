//go:build !race

package uidauth

const raceOn = false
