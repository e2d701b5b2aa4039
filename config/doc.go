// Package config loads spillway's YAML configuration.
//
// Every command works with no file at all: Default returns the built-in
// configuration (the model catalogs of Codex CLI 0.169 and Claude Code 2.1,
// their tier chains, pacing, retry and breaker settings). A file only says
// what differs: scalar settings override the defaults field by field, and a
// provider, model or chain named in the file overrides that entry (fields not
// written keep their default), so adding one model is one line.
//
// Secrets are written as env:VAR references and resolved at load time; they
// are never printed (String and MarshalYAML mask them).
//
// A bad file is reported with every problem found, each naming the file,
// line, field and what is allowed, e.g.
//
//	spillway.yaml:14:7: chains.codex[2]: model "gpt-7" is not defined; defined models: gpt-6-astra, …
package config
