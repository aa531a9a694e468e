package cors

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAllowedMatchesExactOriginsAndSubdomainWildcards(t *testing.T) {
	t.Parallel()
	o, err := Parse([]string{"https://m.example.com", "http://127.0.0.1:5173", "https://*.shop.example", "HTTPS://WWW.Example.org:443", "https://*.example.net:8443",
		"https://n.example.com", "https://m.example.com"})
	require.NoError(t, err)
	tests := []struct {
		give string
		want bool
	}{
		{"https://m.example.com", true},
		{"https://n.example.com", true},  // another entry of the same length
		{"https://o.example.com", false}, // the same length, not listed
		{"http://m.example.com", false},  // another scheme is another origin
		{"https://m.example.com:8443", false},
		{"https://x.m.example.com", false}, // an exact entry allows no subdomain
		{"http://127.0.0.1:5173", true},
		{"http://127.0.0.1:5174", false},
		{"https://a.shop.example", true},
		{"https://a.b.shop.example", true},
		{"https://shop.example", false}, // the wildcard's domain itself is not a subdomain
		{"https://.shop.example", false},
		{"https://evilshop.example", false},
		{"https://evil.com/.shop.example", false},
		{"https://user@a.shop.example", false},
		{"https://a.shop.example:8443", false},
		{"http://a.shop.example", false},
		{"https://www.example.org", true}, // the default port and upper case were normalised
		{"https://a.example.net:8443", true},
		{"https://a.example.net", false},
		{"https://a.b:1.example.net:8443", false},
		{"null", false},
		{"", false},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, o.Allowed(tt.give), tt.give)
	}
	assert.True(t, o.Enabled())
	assert.Len(t, o.byLen[len("https://m.example.com")], 3, "m, n and 127.0.0.1:5173 are 21 bytes: the repeated m is kept once")
}

func TestParseRefusesWhatIsNotAnOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give    string
		wantErr string
	}{
		{"*", "name each origin"},
		{"null", "name each origin"},
		{"m.example.com", "want http://host[:port]"},
		{"ftp://m.example.com", "want http://host[:port]"},
		{"https://m.example.com/", "no path"},
		{"https://m.example.com/app", "no path"},
		{"https://u@m.example.com", "no path, query, user"},
		{"https://", "no path"},
		{"https://m.example.com:0", "not 1-65535"},
		{"https://m.example.com:99999", "not 1-65535"},
		{"https://m.example.com:x", "not 1-65535"},
		{"https://*.*.example.com", "once"},
		{"https://m*.example.com", "once"},
		{"https://*.com", "top-level domain"},
		{"https://m..example.com", "not a host name"},
		{"https://-m.example.com", "not a host name"},
		{"https://m_x.example.com", "not a host name"},
	}
	for _, tt := range tests {
		_, err := Parse([]string{"https://ok.example.com", tt.give})
		require.Error(t, err, tt.give)
		assert.Contains(t, err.Error(), "entry 2 ", tt.give)
		assert.Contains(t, err.Error(), tt.wantErr, tt.give)
	}
}

func TestParseEmptyAllowsNothing(t *testing.T) {
	t.Parallel()
	o, err := Parse(nil)
	require.NoError(t, err)
	assert.False(t, o.Enabled())
	assert.False(t, o.Allowed("https://m.example.com"))
	var zero Origins
	assert.False(t, zero.Allowed("https://m.example.com"))
}
