package httpapi

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanQueryAgreesWithURLValues(t *testing.T) {
	t.Parallel()
	tests := []string{
		"uid=u1&platform=ios&app_version=8.10.0",
		"uid=a%3Ab&platform=web&app_version=1&region=cn&lang=zh",
		"platform=android&uid=x&uid=y&app_version=2&extra=1",
		"uid=&platform=ios",
		"uid=a+b&platform=ios&app_version=1",
		"",
		"&&uid=z&&",
		"uid",
		"platform&platform=ios", // an empty first occurrence still wins (found by FuzzScanQuery)
		"uid=&uid=u2&platform=ios",
	}
	for _, give := range tests {
		t.Run(give, func(t *testing.T) {
			got, aerr := scanQuery(give)
			require.Nil(t, aerr)
			want, err := url.ParseQuery(give)
			require.NoError(t, err)
			assert.Equal(t, homepageQuery{uid: want.Get("uid"), platform: want.Get("platform"), appVersion: want.Get("app_version"),
				region: want.Get("region"), lang: want.Get("lang")}, got)
		})
	}
}

func TestScanQueryRejectsBadEscapes(t *testing.T) {
	t.Parallel()
	_, aerr := scanQuery("uid=%zz&platform=ios")
	require.NotNil(t, aerr)
	assert.Equal(t, "invalid_query", aerr.code)
}

func TestParseRequestAllocations(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		q, _ := scanQuery("uid=user-123&platform=ios&app_version=8.10.0&region=cn&lang=en")
		_, _ = parseRequest(q.uid, q.platform, q.appVersion, q.region, q.lang)
	})
	assert.Zero(t, allocs)
}

func FuzzScanQuery(f *testing.F) {
	f.Add("uid=u1&platform=ios&app_version=8.10.0")
	f.Add("uid=%41&platform=web")
	f.Fuzz(func(t *testing.T, raw string) {
		got, aerr := scanQuery(raw)
		want, err := url.ParseQuery(raw)
		if aerr != nil || err != nil {
			return // either may refuse what the other tolerates (e.g. ';'); both must not panic
		}
		assert.Equal(t, want.Get("uid"), got.uid)
		assert.Equal(t, want.Get("platform"), got.platform)
		assert.Equal(t, want.Get("app_version"), got.appVersion)
	})
}

func FuzzActionBody(f *testing.F) {
	f.Add(`{"uid":"u1","action":"click","event_id":"e-1"}`)
	f.Add(`{"uid":"u1","action":"close","decision_id":"d"}`)
	f.Add(`{"uid":`)
	f.Fuzz(func(t *testing.T, body string) {
		b, aerr := decodeActionBody([]byte(body))
		if aerr != nil {
			assert.Equal(t, 400, aerr.status, "bad bodies are 400s")
			return
		}
		// Whatever is accepted is fit to queue: valid uid, a known action, valid ids.
		assert.True(t, validID(b.UID))
		assert.Contains(t, []string{"click", "close"}, b.Action)
		assert.True(t, b.EventID == "" || validID(b.EventID))
		assert.True(t, b.DecisionID == "" || validID(b.DecisionID))
	})
}
