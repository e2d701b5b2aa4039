package setup

// QwenState says whether Qwen is set up for spillway: state is "" when it
// is not, else what it is set up for ("api key", ...); where is the file
// (or environment) that says so. getenv is the environment setup runs in.
func QwenState(getenv func(string) string) (state, where string) { return "", "" }
