package agent

// opencodeSpec is what exec knows of OpenCode (see spec).
var opencodeSpec = spec{names: []string{"opencode"}}
