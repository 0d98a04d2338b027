package main

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/kubelet-walkthrough/kubelet-walkthrough/chapters/11-client/kubeletclient"
)

// Each of the tool's names for the library's settings names a setting the library has — a field
// of kubeletclient.Options, or the URL FetchURL takes — so that none is silently left as
// "Options.X" in this tool's errors by a misspelt key.
func TestFlagNamesAreSettings(t *testing.T) {
	options := reflect.TypeOf(kubeletclient.Options{})
	assert.NotEmpty(t, flagNames)
	for setting, flag := range flagNames {
		_, isField := options.FieldByName(setting)
		assert.True(t, isField || setting == "KubeletURL", "%s (%s) is no setting of kubeletclient.Options", setting, flag)
		assert.Regexp(t, `^--[a-z-]+$`, flag, setting)
	}
}
