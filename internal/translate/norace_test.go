//go:build !race

package translate

const raceOn = false
