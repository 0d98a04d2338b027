// Package stops continues a program under Delve to a function, and says where it stopped instead,
// or why it did not stop: chapter 13's session and the workshop's check of exercise 16 both step
// a program this way.
package stops

import (
	"fmt"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"
)

// ContinueTo continues the program and returns Delve's state once the program stops in fn, at a
// breakpoint set there; otherwise an error saying where it stopped, or why it did not.
func ContinueTo(client *rpc2.RPCClient, fn string) (*api.DebuggerState, error) {
	state := <-client.Continue()
	if state == nil || state.Err != nil || state.Exited {
		return nil, fmt.Errorf("continue to %s: the program did not stop there: %s", fn, Describe(state))
	}
	th := state.CurrentThread
	if th == nil || th.Function == nil || th.Function.Name() != fn || state.SelectedGoroutine == nil {
		return nil, fmt.Errorf("continue to %s: stopped in %s instead", fn, where(th))
	}
	return state, nil
}

// Describe says what Delve's answer to a continue tells of a program that did not stop: it
// exited, with its status; Delve's error; or no answer.
func Describe(state *api.DebuggerState) string {
	switch {
	case state == nil:
		return "no answer from Delve"
	case state.Err != nil:
		return state.Err.Error()
	case state.Exited:
		return fmt.Sprintf("it exited with status %d", state.ExitStatus)
	}
	return "it is still running"
}

func where(th *api.Thread) string {
	if th == nil || th.Function == nil {
		return "an unknown place"
	}
	return fmt.Sprintf("%s (%s:%d)", th.Function.Name(), th.File, th.Line)
}
