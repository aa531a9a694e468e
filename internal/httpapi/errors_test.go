package httpapi

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"popupsvc/internal/popup"
)

// domainCodes reads every constant of type Code declared in internal/popup, so that a code added
// there is checked without a list to keep up to date by hand.
func domainCodes(t *testing.T) []popup.Code {
	t.Helper()
	dir := filepath.Join("..", "popup")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	fset := token.NewFileSet()
	var codes []popup.Code
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		require.NoError(t, err)
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					require.True(t, ok, "%s: a Code constant is a string literal", fset.Position(v.Pos()))
					s, err := strconv.Unquote(lit.Value)
					require.NoError(t, err)
					codes = append(codes, popup.Code(s))
				}
			}
		}
	}
	return codes
}

func TestEveryDomainCodeHasAStatus(t *testing.T) {
	t.Parallel()
	codes := domainCodes(t)
	require.Contains(t, codes, popup.CodePopupNotFound, "the parse finds the codes")
	for _, code := range codes {
		assert.Contains(t, codeStatus, code, "popup.Code %q has no status in codeStatus", code)
	}
}

// Each domain error answers as docs/CONTRACT.md says: status, code, message, fields and
// role_needed.
func TestDomainErrorsAnswerByTheirCode(t *testing.T) {
	t.Parallel()
	item := func(i int, err error) error {
		return fmt.Errorf("import: %w", &popup.BatchItemError{Index: i, Err: err})
	}
	fields := func(field, msg string) []popup.FieldError { return []popup.FieldError{{Field: field, Message: msg}} }
	tests := []struct {
		name string
		give error
		want Error
	}{
		{name: "not found", give: fmt.Errorf("popup 3: %w", popup.ErrNotFound),
			want: Error{status: http.StatusNotFound, code: "popup_not_found", message: "no such popup"}},
		{name: "revision mismatch", give: popup.ErrRevisionMismatch,
			want: Error{status: http.StatusPreconditionFailed, code: "precondition_failed", message: "the popup has changed since it was read: If-Match does not match its current ETag; read it again and reapply the change"}},
		{name: "name taken", give: fmt.Errorf("%w: Duplicate entry", popup.ErrNameTaken),
			want: Error{status: http.StatusConflict, code: "name_taken", message: "another popup that is not archived has this name; names of live popups are unique",
				fields: fields("name", "is the name of another popup that is not archived")}},
		{name: "revision not kept", give: fmt.Errorf("revision 9: %w", popup.ErrRevisionNotKept),
			want: Error{status: http.StatusNotFound, code: "revision_not_found", message: "the popup has no such revision",
				fields: fields("revision", "is not a revision of this popup (see its history)")}},
		{name: "bucket seed changed", give: popup.ErrBucketSeedChanged,
			want: Error{status: http.StatusBadRequest, code: "validation_failed", message: "bucket_seed cannot change: it would move users between rollout buckets",
				fields: fields("bucket_seed", "cannot change: it would move users between rollout buckets")}},
		{name: "bucket seed changed in an import", give: item(2, popup.ErrBucketSeedChanged),
			want: Error{status: http.StatusBadRequest, code: "validation_failed", message: "popups[2].bucket_seed cannot change: it would move users between rollout buckets",
				fields: fields("popups[2].bucket_seed", "cannot change: it would move users between rollout buckets")}},
		{name: "experiment running", give: popup.ErrExperimentRunning,
			want: Error{status: http.StatusConflict, code: "experiment_running", message: "experiment: the experiment is running: stop it before removing it",
				fields: fields("experiment", "the experiment is running: stop it before removing it")}},
		{name: "experiment concluded in an import", give: item(0, popup.ErrExperimentConcluded),
			want: Error{status: http.StatusConflict, code: "experiment_concluded", message: "popups[0].experiment: the experiment is concluded: it cannot change; remove it (experiment null) to start another",
				fields: fields("popups[0].experiment", "the experiment is concluded: it cannot change; remove it (experiment null) to start another")}},
		{name: "experiment missing", give: popup.ErrExperimentMissing,
			want: Error{status: http.StatusConflict, code: "experiment_missing", message: "experiment: the popup has no experiment",
				fields: fields("experiment", "the popup has no experiment")}},
		{name: "experiment state", give: popup.ErrExperimentState,
			want: Error{status: http.StatusConflict, code: "experiment_state", message: "experiment: the experiment is not in a state that allows this",
				fields: fields("experiment", "the experiment is not in a state that allows this")}},
		{name: "unknown variant", give: popup.ErrUnknownVariant,
			want: Error{status: http.StatusBadRequest, code: "validation_failed", message: "variant no variant has this key",
				fields: fields("variant", "must be the key of one of the experiment's variants")}},
		{name: "validation", give: &popup.ValidationError{Fields: fields("title", "is required")},
			want: Error{status: http.StatusBadRequest, code: "validation_failed", message: "invalid popup: title: is required",
				fields: fields("title", "is required")}},
		{name: "validation of another input names it", give: &popup.ValidationError{Of: "settings", Fields: fields("holdout_percent", "must be a whole number from 0 to 20")},
			want: Error{status: http.StatusBadRequest, code: "validation_failed", message: "invalid settings: holdout_percent: must be a whole number from 0 to 20",
				fields: fields("holdout_percent", "must be a whole number from 0 to 20")}},
		{name: "forbidden", give: &popup.ForbiddenError{Actor: popup.Actor{Name: "ann", Role: popup.RoleEditor}, Needed: popup.RolePublisher, What: "publishing a draft"},
			want: Error{status: http.StatusForbidden, code: "forbidden", message: "publishing a draft needs the publisher role; ann is an editor", roleNeeded: "publisher"}},
		{name: "MySQL unavailable", give: fmt.Errorf("%w: %w", ErrMySQLUnavailable, errors.New("dial tcp: refused")),
			want: *errMySQLDown},
		{name: "anything else", give: errors.New("boom"),
			want: *errInternal},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, *answer(tt.give))
		})
	}
}

func TestASeedChangeIsA400NamingTheField(t *testing.T) {
	t.Parallel()
	tests := []struct {
		give      error
		wantField string
	}{
		{give: popup.ErrBucketSeedChanged, wantField: "bucket_seed"},
		{give: errors.Join(errors.New("update popup 3"), popup.ErrBucketSeedChanged), wantField: "bucket_seed"},
		{give: &popup.BatchItemError{Index: 2, Err: popup.ErrBucketSeedChanged}, wantField: "popups[2].bucket_seed"},
	}
	for _, tt := range tests {
		t.Run(tt.wantField, func(t *testing.T) {
			ae := answer(tt.give)
			assert.Equal(t, http.StatusBadRequest, ae.status)
			assert.Equal(t, []popup.FieldError{{Field: tt.wantField, Message: "cannot change: it would move users between rollout buckets"}}, ae.fields)
		})
	}
}
