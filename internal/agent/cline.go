package agent

// clineSpec is what exec knows of Cline (see spec).
var clineSpec = spec{names: []string{"cline"}}
