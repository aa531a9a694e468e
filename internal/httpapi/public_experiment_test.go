package httpapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/breaker"
	"popupsvc/internal/decide"
	"popupsvc/internal/popup"
	"popupsvc/internal/snapshot"
)

// experimentRouter is the real public router over popup 7, with an experiment when exp is set,
// and an in-memory user store that records everything.
func experimentRouter(t *testing.T, exp *popup.Experiment) http.Handler {
	t.Helper()
	holder := &snapshot.Holder{}
	s := snapshot.BuildWith(1, []popup.Popup{{ID: 7, Name: "exp", Status: popup.StatusActive,
		Targeting: popup.Targeting{RolloutPercent: 100}, ReshowAfterSeconds: 60, Experiment: exp,
		Creative: popup.Creative{
			Title: "own",
		},
	}}, t0, popup.LinkSchemes{}, nil)
	require.Empty(t, s.Problems)
	holder.Store(s)
	d := &decide.Decider{Snapshots: holder, Users: &memUsers{}, Breakers: breaker.NewSet(1, 5, time.Second, nil), Budget: time.Second}
	p := &Public{Snapshots: holder, Decider: d, Now: func() time.Time { return t0 }, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	return p.Router()
}

// decisionSchema is the public answer's schema in api/openapi.yaml.
func decisionSchema(t *testing.T) *openapi3.Schema {
	t.Helper()
	doc, err := openapi3.NewLoader().LoadFromFile("../../api/openapi.yaml")
	require.NoError(t, err)
	require.NoError(t, doc.Validate(context.Background()))
	return doc.Components.Schemas["Decision"].Value
}

func TestPublicAnswerNamesTheVariant(t *testing.T) {
	t.Parallel()
	exp := &popup.Experiment{Status: popup.ExperimentRunning, CoveragePercent: 100, Phase: 1, Salt: "3f9a0c2b7d1e4a65",
		Variants: []popup.Variant{{Key: "a", Weight: 50, Creative: popup.Creative{Title: "variant a"}},
			{Key: "b", Weight: 50, Creative: popup.Creative{Title: "variant b"}}}}
	a := popup.NewAssigner(exp)
	schema := decisionSchema(t)
	tests := []struct {
		name string
		exp  *popup.Experiment
		want func(uid string) *regexp.Regexp
	}{
		{name: "no experiment: the answer as before", want: func(string) *regexp.Regexp {
			return regexp.MustCompile(`^\{"popup":\{"id":7,"title":"own","content":"","image_url":"","link_url":"","buttons":\[\],"ext":\{\}\},` +
				`"decision_id":"[0-9a-f]{16}-[0-9a-z]+","locale":"default","config_version":1\}$`)
		}},
		{name: "a variant", exp: exp, want: func(uid string) *regexp.Regexp {
			key := exp.ArmKey(a.Assign(uid))
			return regexp.MustCompile(`^\{"popup":\{"id":7,"title":"variant ` + key + `","content":"","image_url":"","link_url":"","buttons":\[\],"ext":\{\}\},` +
				`"decision_id":"[0-9a-f]{16}-[0-9a-z]+~7\.` + strconv.Itoa(a.Assign(uid)) + `","locale":"default","variant":"` + key + `","config_version":1\}$`)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := experimentRouter(t, tt.exp)
			for _, uid := range []string{"user-1", "user-2", "user-3", "user-4"} {
				rec := serve(h, http.MethodGet, "/api/v1/popup?uid="+uid+"&platform=ios&app_version=1.0", "")
				require.Equal(t, http.StatusOK, rec.Code)
				assert.Regexp(t, tt.want(uid), rec.Body.String())
				var v any
				require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v))
				assert.NoError(t, schema.VisitJSON(v), "%s", rec.Body)
			}
		})
	}
}

func TestActionTakesAnExperimentsDecisionID(t *testing.T) {
	t.Parallel()
	h := experimentRouter(t, nil)
	rec := serve(h, http.MethodPost, "/api/v1/popups/7/actions", `{"uid":"u1","action":"click","decision_id":"0123456789abcdef-1~7.2"}`)
	assert.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
}
