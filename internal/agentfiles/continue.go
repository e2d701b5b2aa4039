package agentfiles

import (
	"slices"

	"github.com/goccy/go-yaml"
)

// ContinueModel is an entry of the models list of Continue's CLI's
// config.yaml: its name and the model it asks for.
type ContinueModel struct {
	Name, Model string
}

// ContinueFirstChat is the entry cn 1.5.47 runs from config.yaml's bytes
// b: the first of models with the chat role or with no roles key at all
// (cn: `models.find(o => o?.roles?.includes("chat") || o && o.roles ===
// undefined)`), so an empty entry or `roles: null` is passed over. ok is
// false when there is none, when the entry cn would reach first is a block
// of the hub's (uses:, its model is not in the file), or when b is not
// YAML with a list of mappings under models. A name or model that is not
// a string is "".
func ContinueFirstChat(b []byte) (m ContinueModel, ok bool) {
	var c struct {
		Models []map[string]any `yaml:"models"`
	}
	if yaml.Unmarshal(b, &c) != nil {
		return ContinueModel{}, false
	}
	for _, e := range c.Models {
		if e == nil {
			continue
		}
		if _, hub := e["uses"]; hub {
			return ContinueModel{}, false
		}
		if r, has := e["roles"]; has {
			if roles, _ := r.([]any); !slices.Contains(roles, any("chat")) {
				continue
			}
		}
		m.Name, _ = e["name"].(string)
		m.Model, _ = e["model"].(string)
		return m, true
	}
	return ContinueModel{}, false
}
