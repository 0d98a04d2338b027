package checks

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Exercise 16's answers are judged against what the kubelet showed in Delve, whatever it showed:
// this evidence is made up (no kubelet has these lines), and answers in every form an attendee
// may copy from Delve's terminal pass against it.
func TestWorkerJudge(t *testing.T) {
	ev := workerEvidence{
		goStatement: location{function: "example.com/k/pkg/w.(*pool).Add", file: "/mod/example.com/k@v1.0.0/pkg/w/pool.go", line: 42},
		creator:     location{function: "example.com/k/cmd/app.start", file: "/mod/example.com/k@v1.0.0/cmd/app/start.go", line: 7},
		creatorID:   12, parentID: 12,
		handler:    location{function: "example.com/k/pkg/w.(*Loop).HandleNew", file: "/mod/example.com/k@v1.0.0/pkg/w/loop.go", line: 90},
		loop:       location{function: "example.com/k/pkg/w.(*Loop).iterate", file: "/mod/example.com/k@v1.0.0/pkg/w/loop.go", line: 60},
		selectCase: "case msg, ok := <-inbox → case types.NEW",
		op:         "NEW (3)", source: `"disk"`,
	}
	good := workerAnswers{GoStatement: "example.com/k/pkg/w.(*pool).Add at /mod/example.com/k@v1.0.0/pkg/w/pool.go:42",
		Creator: "/mod/example.com/k@v1.0.0/cmd/app/start.go:7", Channel: "inbox", Op: "NEW", Source: "disk",
		Handler: "example.com/k/pkg/w.(*Loop).HandleNew"}
	for _, tc := range []struct {
		name    string
		edit    func(*workerAnswers)
		missing string // "" passes
	}{
		{"as the rehearsal writes them", func(*workerAnswers) {}, ""},
		{"short forms", func(a *workerAnswers) {
			*a = workerAnswers{GoStatement: "Add, pool.go:42", Creator: "start.go:7", Channel: "<-inbox", Op: "types.NEW", Source: `"disk"`, Handler: "HandleNew"}
		}, ""},
		{"as Delve prints the operation", func(a *workerAnswers) { a.Op = "NEW (3)" }, ""},
		{"the worker's start function for its go statement's", func(a *workerAnswers) { a.GoStatement = "Add.func1 pool.go:43" }, "goStatement:"},
		{"the go statement without its function", func(a *workerAnswers) { a.GoStatement = "pool.go:42" }, "goStatement:"},
		{"the worker's go statement for the creator's", func(a *workerAnswers) { a.Creator = "pool.go:42" }, "creator:"},
		{"another channel", func(a *workerAnswers) { a.Channel = "ticks" }, "channel:"},
		{"another operation", func(a *workerAnswers) { a.Op = "UPDATE" }, "op:"},
		{"another source", func(a *workerAnswers) { a.Source = "api" }, "source:"},
		{"the loop for the handler", func(a *workerAnswers) { a.Handler = "iterate" }, "handler:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := good
			tc.edit(&a)
			r, err := ev.judge(a)
			require.NoError(t, err)
			if tc.missing == "" {
				assert.True(t, r.Passed(), "%v", r.Missing)
				return
			}
			require.Len(t, r.Missing, 1)
			assert.True(t, strings.HasPrefix(r.Missing[0], tc.missing), r.Missing[0])
		})
	}

	// A stop in no receiving case of a select is not something the answers can be held to.
	ev.selectCase = "case <-done"
	_, err := ev.judge(good)
	assert.NoError(t, err, "a receive without a variable is still a channel")
	ev.selectCase = ""
	_, err = ev.judge(good)
	assert.ErrorContains(t, err, "in no select case that receives")
}
