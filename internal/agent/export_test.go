package agent

// SecureStateDir is secureStateDir, for the tests of package agent_test.
var SecureStateDir = secureStateDir

// printed is the output of a failed run that printed stdout and stderr,
// for the tests that judge it or find its session.
func printed(stdout, stderr string) runOut {
	out := runOut{code: 1, stdout: newTail(1 << 16), stderr: newTail(1 << 16)}
	_, _ = out.stdout.Write([]byte(stdout))
	_, _ = out.stderr.Write([]byte(stderr))
	return out
}
