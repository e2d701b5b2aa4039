package agent

// copilotSpec is what exec knows of Copilot (see spec).
var copilotSpec = spec{names: []string{"copilot"}}
