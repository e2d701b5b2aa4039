package events

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultPath returns where the event log lives when the config names none:
// $SPILLWAY_EVENTS if set, else $XDG_STATE_HOME/spillway/events.jsonl (the
// XDG spec says to ignore a relative value), else
// $HOME/.local/state/spillway/events.jsonl. It returns "" when none of these
// is usable. getenv is usually os.Getenv.
func DefaultPath(getenv func(string) string) string {
	if p := getenv("SPILLWAY_EVENTS"); p != "" {
		return p
	}
	if d := StateDir(getenv); d != "" {
		return filepath.Join(d, "events.jsonl")
	}
	return ""
}

// StateDir is where spillway keeps its state (the event log, doctor's
// baseline, the agents' settings exec writes): $XDG_STATE_HOME/spillway
// (a relative XDG_STATE_HOME is ignored), else
// $HOME/.local/state/spillway; "" when neither is set.
func StateDir(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "spillway")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".local", "state", "spillway")
	}
	return ""
}

// rotatedName is the name of the n-th rotated file of path.
func rotatedName(path string, n int) string {
	return path + "." + strconv.Itoa(n)
}

// rotatedNumbers lists the N of every existing path.N (N >= 1, written
// without leading zeros), newest (1) first.
func rotatedNumbers(path string) ([]int, error) { return rotatedNumbersWith(path, "") }

// rotatedNumbersWith lists the N of every existing path.N+ext.
func rotatedNumbersWith(path, ext string) ([]int, error) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	prefix := filepath.Base(path) + "."
	var nums []int
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ext)
		if !ok {
			continue
		}
		suffix, ok := strings.CutPrefix(name, prefix)
		if !ok || suffix == "" || suffix[0] == '0' || strings.Trim(suffix, "0123456789") != "" {
			continue
		}
		if n, err := strconv.Atoi(suffix); err == nil {
			nums = append(nums, n)
		}
	}
	slices.Sort(nums)
	return nums, nil
}
