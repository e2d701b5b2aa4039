package config

import (
	_ "embed"
	"fmt"

	"github.com/goccy/go-yaml"
)

// Starter is the commented file `spillway init` writes.
//
//go:embed starter.yaml
var Starter []byte

// Effective renders the configuration as YAML with secrets masked.
func (c *Config) Effective() ([]byte, error) {
	b, err := yaml.MarshalWithOptions(c, yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("config: render: %w", err)
	}
	return b, nil
}
