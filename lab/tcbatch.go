package lab

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
)

// tcChanger runs tc commands in a namespace for the moving bottleneck. A
// schedule of a few steps runs one tc process per step; a trace's, with
// up to ten steps a second, writes them to one `tc -batch -` process,
// which executes each line as it arrives, so that a step costs a pipe
// write rather than two process starts.
type tcChanger struct {
	ctx   context.Context
	ns    string
	cmd   *exec.Cmd
	stdin io.WriteCloser
}

// batchSteps is the schedule length from which the changer uses one
// tc -batch process.
const batchSteps = 8

func newTCChanger(ctx context.Context, ns string, steps int) *tcChanger {
	c := &tcChanger{ctx: ctx, ns: ns}
	if steps < batchSteps {
		return c
	}
	cmd := exec.CommandContext(ctx, "ip", "netns", "exec", ns, "tc", "-force", "-batch", "-")
	in, err := cmd.StdinPipe()
	if err != nil {
		return c
	}
	if err := cmd.Start(); err != nil {
		return c
	}
	c.cmd, c.stdin = cmd, in
	return c
}

// run runs `tc args...`.
func (c *tcChanger) run(args []string) error {
	if c.cmd == nil {
		_, err := nsRun(c.ctx, c.ns, "tc", args...)
		return err
	}
	_, err := fmt.Fprintln(c.stdin, strings.Join(args, " "))
	return err
}

// close ends the batch process, if any.
func (c *tcChanger) close() {
	if c.cmd != nil {
		c.stdin.Close()
		c.cmd.Wait()
	}
}
