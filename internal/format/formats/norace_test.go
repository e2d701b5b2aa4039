//go:build !race

package formats

const raceOn = false
