package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spillway/spillway/internal/serve"
)

// Parts of the overhead bench that run as processes of their own
// (`spillway bench part KIND`), so that the load generator, the upstream
// and the proxy do not share a process, a heap or a scheduler.
const (
	PartUpstream = "upstream"
	PartBare     = "bare"
	PartGateway  = "gateway"
	// PartFailover and PartFailoverOpen are gateways for the failover
	// paths (OverheadOptions.Failover): their first model full, its
	// breaker held closed, or left to open.
	PartFailover     = "gateway-failover"
	PartFailoverOpen = "gateway-failover-open"
)

// Part serves one part on loopback until ctx ends, and writes "listening
// ADDR" to out once it answers. target is the upstream's URL (bare,
// gateway); tokenRate the upstream's (0: answers at once); cpuprofile, when
// set, the file for a CPU profile of the part's whole life.
func Part(ctx context.Context, kind, target string, tokenRate float64, pacingOff bool, cpuprofile string, out io.Writer) error {
	if cpuprofile != "" {
		stop, err := CPUProfile(cpuprofile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var addr string
	var err error
	switch kind {
	case PartUpstream:
		addr, err = startUpstream(ctx, tokenRate)
	case PartBare:
		addr, err = startBare(ctx, target)
	case PartGateway, PartFailover, PartFailoverOpen:
		serve.TuneGC(os.Getenv, serve.GatewayGC) // as `spillway serve` runs
		var done func()
		addr, done, err = startGateway(ctx, target, pacingOff, "", map[string]string{PartFailover: failClosed, PartFailoverOpen: failOpen}[kind])
		if err == nil {
			defer done()
		}
	default:
		return fmt.Errorf("bench part: %q: allowed: upstream, bare, gateway, %s, %s", kind, PartFailover, PartFailoverOpen)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "listening %s\n", addr)
	<-ctx.Done()
	return nil
}

// CPUProfile starts a CPU profile of this process into path; stop ends
// it and closes the file.
func CPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// proc is a part running as a child process.
type proc struct {
	cmd  *exec.Cmd
	addr string
}

// startPart runs `spillway bench part kind` (this executable) and waits for
// its address.
func startPart(ctx context.Context, kind, target string, tokenRate float64, pacingOff bool, cpuprofile string) (*proc, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{"bench", "part", kind, "--target", target, "--token-rate", strconv.FormatFloat(tokenRate, 'f', -1, 64)}
	if pacingOff {
		args = append(args, "--pacing-off")
	}
	if cpuprofile != "" {
		args = append(args, "--cpuprofile", cpuprofile)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.SysProcAttr = partAttr() // the part goes when this process dies
	cmd.WaitDelay = 5 * time.Second
	cmd.Stderr = os.Stderr
	if kind != PartUpstream && kind != PartBare { // a gateway: the Bedrock path's AWS test credentials
		cmd.Env = append(os.Environ(), benchAWSEnv()...)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if err != nil || !ok {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("bench part %s did not start: %q %v", kind, line, err)
	}
	go io.Copy(io.Discard, stdout)
	return &proc{cmd: cmd, addr: addr}, nil
}

func (p *proc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
}

// cpu is the process's user and system CPU time so far (Linux: /proc).
func (p *proc) cpu() time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// the fields after the command's name (which is in parentheses)
	i := strings.LastIndexByte(string(b), ')') // the name may hold a ')'
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b)[i+1:])
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / clockTicks
}

// clockTicks is USER_HZ, 100 on every Linux this runs on.
const clockTicks = 100

// peakRSS is the process's peak resident set so far, in MB (VmHWM).
func (p *proc) peakRSS() float64 { return vmHWM(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid)) }

func vmHWM(path string) float64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
