package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMixPopupsAreTheIssuesMixAndTheSameEveryRun(t *testing.T) {
	ps := mixPopups(1000, 10, "m")

	require.Len(t, ps, 1000)
	assert.Equal(t, ps, mixPopups(1000, 10, "m"), "a seeded draw: every run imports the same list")
	rolled := 0
	for _, p := range ps {
		tg := p["targeting"].(map[string]any)
		assert.NotEmpty(t, tg["platforms"])
		assert.LessOrEqual(t, len(tg["platforms"].([]string)), 3)
		regions := tg["regions"].([]string)
		assert.NotEmpty(t, regions)
		assert.LessOrEqual(t, len(regions), 3)
		assert.Regexp(t, `^m[0-9]$`, regions[0])
		if r, ok := tg["rollout_percent"]; ok {
			assert.Contains(t, []int{10, 30, 50}, r)
			rolled++
		}
		assert.GreaterOrEqual(t, p["priority"], 1)
		assert.LessOrEqual(t, p["priority"], 500)
	}
	assert.InDelta(t, 300, rolled, 60, "about 30% rolled out to part of the users")
}
