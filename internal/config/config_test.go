package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaults(t *testing.T) {
	c, err := Parse(map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, ":8080", c.HTTPAddr)
	assert.Equal(t, "127.0.0.1:8081", c.AdminAddr)
	assert.Equal(t, 50*time.Millisecond, c.RedisTimeout)
	assert.Equal(t, 0, c.UserDailyCap)
	assert.Equal(t, []string{"127.0.0.1:6379"}, c.RedisAddrs())
}

func TestParseRejects(t *testing.T) {
	tests := []struct {
		name string
		give map[string]string
		want string
	}{
		{"admin shares the public listener", map[string]string{"POPUP_ADMIN_ADDR": ":8080"}, "POPUP_ADMIN_ADDR"},
		{"bad address", map[string]string{"POPUP_HTTP_ADDR": "8080"}, "POPUP_HTTP_ADDR"},
		{"negative cap", map[string]string{"POPUP_USER_DAILY_CAP": "-1"}, "POPUP_USER_DAILY_CAP"},
		{"not a number", map[string]string{"POPUP_USER_DAILY_CAP": "many"}, "USER_DAILY_CAP"},
		{"zero timeout", map[string]string{"POPUP_REDIS_TIMEOUT": "0s"}, "POPUP_REDIS_TIMEOUT"},
		{"bad DSN", map[string]string{"POPUP_MYSQL_DSN": "nonsense@@"}, "POPUP_MYSQL_DSN"},
		{"batch over the packet budget", map[string]string{"POPUP_WORKER_BATCH_SIZE": "100000"}, "POPUP_WORKER_BATCH_SIZE"},
		{"braces in the prefix", map[string]string{"POPUP_REDIS_PREFIX": "a{b}"}, "POPUP_REDIS_PREFIX"},
		{"log level", map[string]string{"POPUP_LOG_LEVEL": "loud"}, "POPUP_LOG_LEVEL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.give)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestStringMasksSecrets(t *testing.T) {
	c, err := Parse(map[string]string{"POPUP_ADMIN_TOKEN": "s3cret-token", "POPUP_REDIS_PASSWORD": "redispass",
		"POPUP_MYSQL_DSN": "app:dbpass@tcp(db:3306)/popup"})
	require.NoError(t, err)
	s := c.String()
	for _, secret := range []string{"s3cret-token", "redispass", "dbpass"} {
		assert.NotContains(t, s, secret)
	}
	assert.Contains(t, s, "POPUP_ADMIN_TOKEN=***")
	assert.Contains(t, s, "app:***@tcp(db:3306)/popup")
}

func TestREADMEListsEveryVariable(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	for _, v := range Vars() {
		assert.True(t, strings.Contains(string(readme), "`"+v.Name+"`"), "README.md does not document %s", v.Name)
	}
}
