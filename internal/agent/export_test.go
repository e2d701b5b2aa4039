package agent

// SecureStateDir is secureStateDir, for the tests of package agent_test.
var SecureStateDir = secureStateDir
