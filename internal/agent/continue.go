package agent

// continueSpec is what exec knows of Continue (see spec).
var continueSpec = spec{names: []string{"cn"}}
