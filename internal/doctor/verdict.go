package doctor

import (
	"strings"
)

// verdict weighs the findings: the overall status, and one sentence that
// says whose problem it is, most pressing first.
func verdict(fs []Finding, probed bool, alternative func(model string) string) (Status, string) {
	st := Unknown
	for _, f := range fs {
		st = worse(st, f.Status)
	}
	first := func(pred func(Finding) bool) (Finding, bool) {
		for _, f := range fs {
			if pred(f) {
				return f, true
			}
		}
		return Finding{}, false
	}
	var fullModels []string
	for _, f := range fs {
		if f.Area == "model" && f.Class == "capacity" {
			fullModels = append(fullModels, f.Subject)
		}
	}
	if f, ok := first(func(f Finding) bool { return f.Class == "auth" && f.Status == Broken }); ok {
		if f.advice != "" {
			summary, _, _ := strings.Cut(f.Summary, ": "+f.advice)
			return st, "Your " + f.Subject + " " + summary + ": capacity is not the problem. " + f.advice
		}
		return st, "Your " + f.Subject + " " + strings.Replace(f.Summary, "key rejected", "key is rejected", 1) + ": capacity is not the problem. Check the key, or log in again."
	}
	if f, ok := first(func(f Finding) bool { return f.Class == "usage_limit" && f.Status == Broken }); ok {
		return st, "Your " + strings.TrimPrefix(f.Summary, "your ") + ". Wait for the reset (spillway exec --until-reset does), or overflow to another provider (a chain's on_usage_limit: overflow)."
	}
	if f, ok := first(func(f Finding) bool { return f.Class == "quota" && f.Status == Broken }); ok {
		if f.Area == "agent" {
			return st, "Your " + strings.TrimPrefix(f.Summary, "your ") + ". Wait for the reset, or use an API key."
		}
		return st, "Your " + f.Subject + " quota is used up: capacity is not the problem. Add credit or raise the limit; waiting for a quiet hour will not help."
	}
	if f, ok := first(func(f Finding) bool { return f.Area == "network" && f.Status == Broken }); ok {
		return st, f.Subject + " cannot be reached (" + f.Summary + "): it is the network or the provider's front door, not capacity."
	}
	if f, ok := first(func(f Finding) bool { return f.Area == "key" && f.Status == Broken }); ok {
		return st, f.Subject + " gives no answer (" + f.Summary + "): it is the network or the provider, not capacity."
	}
	if f, ok := first(func(f Finding) bool { return f.Area == "model" && f.Status == Broken }); ok {
		return st, f.Subject + ": " + f.Summary + ". Fix the model in the configuration; capacity is not the problem."
	}
	if len(fullModels) > 0 {
		s := "Your account and network are fine; " + strings.Join(fullModels, ", ") + " " + isAre(len(fullModels)) + " at capacity right now: "
		if alt := alternative(fullModels[0]); alt != "" {
			s += "switch to " + alt + " (next in its chain, answering) or wait"
		} else {
			s += "wait, or switch chains"
		}
		return st, s + " (spillway serve does this for you)."
	}
	if f, ok := first(func(f Finding) bool { return f.Class == "rate_limit" }); ok {
		return st, "You are rate-limited on " + f.Subject + " (" + f.Summary + "): that is your key's request rate, not capacity; spillway paces for you."
	}
	if f, ok := first(func(f Finding) bool { return f.Area == "agent" && f.Status == Degraded }); ok {
		return st, "Your " + strings.TrimPrefix(f.Summary, "your ") + "."
	}
	if f, ok := first(func(f Finding) bool { return f.Area == "status" && f.Status != Healthy && f.Status != Unknown }); ok {
		return st, f.Summary + ": the trouble is on their side."
	}
	if f, ok := first(func(f Finding) bool { return f.Status == Degraded }); ok {
		return st, "Mostly fine, but " + f.Subject + ": " + f.Summary + "."
	}
	checked := false
	var unchecked []string
	for _, f := range fs {
		checked = checked || (f.Area == "key" && f.Status == Healthy)
		if f.Area == "key" && f.Status == Unknown {
			unchecked = append(unchecked, f.Subject)
		}
	}
	tail := ""
	if len(unchecked) > 0 {
		tail = " No key to check " + strings.Join(unchecked, ", ") + " with (see key)."
	}
	switch {
	case !checked:
		return st, "Your network is fine, but no key could be checked (see key): set the key the agents use to check the account."
	case probed:
		return st, "The keys checked and the network are fine, and every model probed answered." + tail
	}
	return st, "The keys checked and the network are fine (capacity not checked: run with --probe)." + tail
}

func isAre(n int) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
