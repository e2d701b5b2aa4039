package agent

// qwenSpec is what exec knows of Qwen (see spec).
var qwenSpec = spec{names: []string{"qwen"}}
