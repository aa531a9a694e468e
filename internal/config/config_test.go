package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/operator"
	"popupsvc/internal/popup"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse(map[string]string{})
	require.NoError(t, err)
	assert.Equal(t, ":8080", c.HTTPAddr)
	assert.Equal(t, "127.0.0.1:8081", c.AdminAddr)
	assert.Equal(t, 50*time.Millisecond, c.RedisTimeout)
	assert.Equal(t, 0, c.UserDailyCap)
	assert.Equal(t, []string{"127.0.0.1:6379"}, c.RedisAddrs())
	assert.Empty(t, c.UIDHMACKeys, "uid signatures are off unless keys are configured")
	assert.Equal(t, 5*time.Minute, c.UIDHMACMaxAge)
	assert.Equal(t, []string{"http", "https"}, c.LinkSchemes)
	assert.Equal(t, "http, https", c.Links().String())
}

func TestLinkSchemesAddAppSchemes(t *testing.T) {
	t.Parallel()
	c, err := Parse(map[string]string{"POPUP_LINK_SCHEMES": "https,myapp,com.example.app"})
	require.NoError(t, err)
	assert.True(t, c.Links().Allows("myapp"))
	assert.False(t, c.Links().Allows("http"))
}

func TestCORSOriginsOffByDefault(t *testing.T) {
	t.Parallel()
	c, err := Parse(map[string]string{})
	require.NoError(t, err)
	origins := c.CORS()
	assert.False(t, origins.Enabled())
	c, err = Parse(map[string]string{"POPUP_CORS_ORIGINS": "https://m.example.com,https://*.example.org"})
	require.NoError(t, err)
	origins = c.CORS()
	assert.True(t, origins.Allowed("https://m.example.com"))
	assert.True(t, origins.Allowed("https://shop.example.org"))
	assert.False(t, origins.Allowed("https://example.org"))
}

func TestUIDHMACKeysRotation(t *testing.T) {
	t.Parallel()
	c, err := Parse(map[string]string{"POPUP_UID_HMAC_KEYS": strings.Repeat("n", 32) + "," + strings.Repeat("o", 64), "POPUP_UID_HMAC_MAX_AGE": "90s"})
	require.NoError(t, err)
	assert.Equal(t, []string{strings.Repeat("n", 32), strings.Repeat("o", 64)}, c.UIDHMACKeys)
	assert.Equal(t, 90*time.Second, c.UIDHMACMaxAge)
}

func TestParseRejects(t *testing.T) {
	t.Parallel()
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
		{"uid HMAC key under 32 bytes", map[string]string{"POPUP_UID_HMAC_KEYS": strings.Repeat("k", 32) + ",short"}, "POPUP_UID_HMAC_KEYS: key 2 is 5 bytes"},
		{"empty uid HMAC key after a comma", map[string]string{"POPUP_UID_HMAC_KEYS": strings.Repeat("k", 32) + ","}, "POPUP_UID_HMAC_KEYS: key 2 is 0 bytes"},
		{"uid HMAC key with a space", map[string]string{"POPUP_UID_HMAC_KEYS": strings.Repeat("k", 32) + ", " + strings.Repeat("k", 32)}, "POPUP_UID_HMAC_KEYS: key 2 has leading"},
		{"zero uid HMAC max age", map[string]string{"POPUP_UID_HMAC_MAX_AGE": "0s"}, "POPUP_UID_HMAC_MAX_AGE"},
		{"privacy key under 32 bytes", map[string]string{"POPUP_PRIVACY_KEY": strings.Repeat("k", 31)}, "POPUP_PRIVACY_KEY: is 31 bytes; it must be at least 32"},
		{"privacy key with a space", map[string]string{"POPUP_PRIVACY_KEY": " " + strings.Repeat("k", 32)}, "POPUP_PRIVACY_KEY: has leading or trailing white space"},
		{"upper-case link scheme", map[string]string{"POPUP_LINK_SCHEMES": "http,HTTPS"}, `POPUP_LINK_SCHEMES: item 2 ("HTTPS") is not a lower-case URL scheme name`},
		{"javascript link scheme", map[string]string{"POPUP_LINK_SCHEMES": "https,javascript"}, "POPUP_LINK_SCHEMES: javascript links run code"},
		{"link scheme with a colon", map[string]string{"POPUP_LINK_SCHEMES": "https:"}, "POPUP_LINK_SCHEMES"},
		{"empty link scheme item", map[string]string{"POPUP_LINK_SCHEMES": "https,,myapp"}, "POPUP_LINK_SCHEMES: item 2"},
		{"CORS origin with a path", map[string]string{"POPUP_CORS_ORIGINS": "https://m.example.com,https://w.example.com/app"}, `POPUP_CORS_ORIGINS: entry 2 "https://w.example.com/app": an origin is scheme://host[:port]: no path`},
		{"CORS star", map[string]string{"POPUP_CORS_ORIGINS": "*"}, "POPUP_CORS_ORIGINS: entry 1 \"*\": name each origin"},
		{"uid HMAC max age under a second", map[string]string{"POPUP_UID_HMAC_MAX_AGE": "500ms"}, "POPUP_UID_HMAC_MAX_AGE"},
		{"upload rate too slow for the admin timeout", map[string]string{"POPUP_AUDIENCE_UPLOAD_RATE": "999999"}, "POPUP_AUDIENCE_UPLOAD_RATE: must be 0 (unpaced) or at least 1000000"},
		{"negative upload rate", map[string]string{"POPUP_AUDIENCE_UPLOAD_RATE": "-1"}, "POPUP_AUDIENCE_UPLOAD_RATE"},
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
	t.Parallel()
	hmacKeys := []string{"uid-hmac-key-one-0123456789abcdef0123", "uid-hmac-key-two-0123456789abcdef0123"}
	c, err := Parse(map[string]string{"POPUP_ADMIN_TOKEN": "s3cret-token", "POPUP_REDIS_PASSWORD": "redispass",
		"POPUP_MYSQL_DSN": "app:dbpass@tcp(db:3306)/popup", "POPUP_UID_HMAC_KEYS": strings.Join(hmacKeys, ","),
		"POPUP_PRIVACY_KEY": "privacy-key-0123456789abcdef0123456789"})
	require.NoError(t, err)
	s := c.String()
	for _, secret := range append([]string{"s3cret-token", "redispass", "dbpass", "uid-hmac-key", "privacy-key-"}, hmacKeys...) {
		assert.NotContains(t, s, secret)
	}
	assert.Contains(t, s, "POPUP_ADMIN_TOKEN=***")
	assert.Contains(t, s, "app:***@tcp(db:3306)/popup")
	assert.Contains(t, s, "POPUP_UID_HMAC_KEYS=***,*** ", "one mask per key")
	assert.Contains(t, s, "POPUP_PRIVACY_KEY=***")

	none, err := Parse(map[string]string{})
	require.NoError(t, err)
	assert.Contains(t, none.String(), "POPUP_UID_HMAC_KEYS= ", "no keys: nothing to mask")
}

// TestConfigurationDocMatchesTheStruct: docs/CONFIGURATION.md's table is the one list of the
// variables; it names every variable of Config, no other, each once, with the struct's default.
func TestConfigurationDocMatchesTheStruct(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/CONFIGURATION.md")
	require.NoError(t, err)
	row := regexp.MustCompile("(?m)^\\|\\s*`(POPUP_[A-Z0-9_]+)`\\s*\\|\\s*`([^`]*)`\\s*\\|")
	documented := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		def := m[2]
		if def == "(empty)" {
			def = ""
		}
		_, twice := documented[m[1]]
		assert.False(t, twice, "docs/CONFIGURATION.md lists %s twice", m[1])
		documented[m[1]] = def
	}
	want := map[string]string{}
	for _, v := range Vars() {
		want[v.Name] = v.Default
	}
	assert.Equal(t, want, documented, "docs/CONFIGURATION.md's table (name | `default` | meaning) against Config's env and envDefault tags")
}

func TestOperatorsFromEveryVariable(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("# mounted secret\n\ncarol:tok-c\n  dave @ viewer :tok-d  \nerin@publisher:tok@e\n"), 0o600))
	c, err := Parse(map[string]string{"POPUP_ADMIN_TOKENS": "alice:tok-a,bob@editor:tok:b", "POPUP_ADMIN_TOKENS_FILE": file,
		"POPUP_ADMIN_TOKEN": "tok-admin"})
	require.NoError(t, err)
	ops, err := c.Operators()
	require.NoError(t, err)
	assert.Equal(t, []operator.Operator{
		{Name: "alice", Role: popup.RoleAdmin, Token: "tok-a"}, // no role: admin, as before roles existed
		{Name: "bob", Role: popup.RoleEditor, Token: "tok:b"},
		{Name: "carol", Role: popup.RoleAdmin, Token: "tok-c"},
		{Name: "dave", Role: popup.RoleViewer, Token: "tok-d"},
		{Name: "erin", Role: popup.RolePublisher, Token: "tok@e"}, // '@' in a token is the token's
		{Name: "admin", Role: popup.RoleAdmin, Token: "tok-admin"},
	}, ops)
	s := c.String()
	for _, secret := range []string{"tok-a", "tok:b", "tok-admin"} {
		assert.NotContains(t, s, secret)
	}
	assert.Contains(t, s, "POPUP_ADMIN_TOKENS=***,*** ")
}

func TestOperatorsRejected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		give map[string]string
		want string
	}{
		{"no colon", map[string]string{"POPUP_ADMIN_TOKENS": "alice"}, "POPUP_ADMIN_TOKENS: pair 1: not an operator entry (name:token or name@role:token)"},
		{"unknown role", map[string]string{"POPUP_ADMIN_TOKENS": "bob:t2,alice@boss:t1"}, `POPUP_ADMIN_TOKENS: pair 2: operator "alice@boss": unknown role "boss": must be viewer, editor, publisher or admin`},
		{"empty role", map[string]string{"POPUP_ADMIN_TOKENS": "alice@:t1"}, `POPUP_ADMIN_TOKENS: pair 1: operator "alice@": unknown role ""`},
		{"role in upper case", map[string]string{"POPUP_ADMIN_TOKENS": "alice@Admin:t1"}, `unknown role "Admin"`},
		{"two roles", map[string]string{"POPUP_ADMIN_TOKENS": "alice@editor@admin:t1"}, `unknown role "editor@admin"`},
		{"bad name", map[string]string{"POPUP_ADMIN_TOKENS": "al ice:t"}, "POPUP_ADMIN_TOKENS: pair 1: operator name"},
		{"empty token", map[string]string{"POPUP_ADMIN_TOKENS": "alice:"}, `operator "alice" has an empty token`},
		{"name twice", map[string]string{"POPUP_ADMIN_TOKENS": "alice:t1,alice:t2"}, `pair 2: operator "alice" is named twice`},
		{"token twice", map[string]string{"POPUP_ADMIN_TOKENS": "alice:t1,bob:t1"}, `pair 2: operator "bob" has the token of another operator`},
		{"admin twice", map[string]string{"POPUP_ADMIN_TOKENS": "admin:t1", "POPUP_ADMIN_TOKEN": "t2"}, `POPUP_ADMIN_TOKEN: operator "admin" is named twice`},
		{"missing file", map[string]string{"POPUP_ADMIN_TOKENS_FILE": "/nonexistent/tokens"}, "POPUP_ADMIN_TOKENS_FILE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.give)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), "t1")
		})
	}
}

func TestOperatorsFileLineNamed(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "tokens")
	require.NoError(t, os.WriteFile(file, []byte("alice:tok-a\n# c\nbob\ncarol@owner:tok-c\n"), 0o600))
	_, err := Parse(map[string]string{"POPUP_ADMIN_TOKENS_FILE": file})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "line 3: not an operator entry")
	assert.Contains(t, err.Error(), `line 4: operator "carol@owner": unknown role "owner"`)
	assert.NotContains(t, err.Error(), "tok-c")
	assert.NotContains(t, err.Error(), "tok-a")
}

func TestShardsDefaultToSixteenOnAClusterOnly(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		env  map[string]string
		want int
	}{
		{map[string]string{"POPUP_REDIS_ADDR": "127.0.0.1:6379"}, 1},
		{map[string]string{"POPUP_REDIS_ADDR": "a:1,b:2,c:3"}, ClusterQueueShards},
		{map[string]string{"POPUP_REDIS_ADDR": "a:1", "POPUP_REDIS_CLUSTER": "true"}, ClusterQueueShards},
		{map[string]string{"POPUP_REDIS_ADDR": "s1:26379,s2:26379", "POPUP_REDIS_MASTER_NAME": "popup"}, 1},
		{map[string]string{"POPUP_REDIS_ADDR": "a:1,b:2", "POPUP_QUEUE_SHARDS": "4"}, 4},
		{map[string]string{"POPUP_REDIS_ADDR": "127.0.0.1:6379", "POPUP_QUEUE_SHARDS": "3"}, 3},
	} {
		cfg, err := Parse(c.env)
		require.NoError(t, err, c.env)
		assert.Equal(t, c.want, cfg.Shards(), "%v", c.env)
	}
	for _, bad := range []map[string]string{{"POPUP_QUEUE_SHARDS": "-1"}, {"POPUP_QUEUE_SHARDS": "1025"},
		{"POPUP_REDIS_ACK_REPLICAS": "-1"}, {"POPUP_REDIS_CLUSTER_RELOAD": "0s"}} {
		_, err := Parse(bad)
		require.Error(t, err, bad)
		for name := range bad {
			assert.Contains(t, err.Error(), name, "the error names the variable")
		}
	}
}
