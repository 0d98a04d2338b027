// Package validtable runs the table each chapter's TestValidate is: options that start good, one
// change a row, and the error that change must give — or none.
package validtable

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Case is one row: a change to good options, and a part of the error it must give ("" for none).
type Case[O any] struct {
	Name    string
	Change  func(o *O)
	WantErr string
}

// Run checks each case on a fresh copy of good, with validate.
func Run[O any](t *testing.T, good func() *O, validate func(*O) error, cases []Case[O]) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			o := good()
			tc.Change(o)
			err := validate(o)
			if tc.WantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.WantErr)
		})
	}
}
