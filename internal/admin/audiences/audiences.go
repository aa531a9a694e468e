// Package audiences is the admin slice of the audiences (docs/CONTRACT.md §11): named uid sets
// popups target; their routes, the use case port, the member upload formats and the wire shapes.
package audiences

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/audience"
	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// Audiences on the admin API (docs/CONTRACT.md §11): uploaded lists of users that popups target.

// API serves the audiences.
type API struct {
	*httpapi.Shared
	Audiences AudienceService
	// AudienceSets are the member sets this instance serves.
	AudienceSets AudienceSets
}

// Register adds the audience routes: creating and editing one is an editor's, deleting one a
// publisher's; a member write of an audience a live popup uses needs a publisher, decided in
// the write.
func (a *API) Register(g *gin.RouterGroup) {
	editor := a.Require(popup.RoleEditor, "writing audiences")
	g.POST("/audiences", editor, a.createAudience)
	g.GET("/audiences", a.listAudiences)
	g.GET("/audiences/:id", a.getAudience)
	g.PUT("/audiences/:id", editor, a.updateAudience)
	g.DELETE("/audiences/:id", a.Require(popup.RolePublisher, "deleting an audience"), a.deleteAudience)
	g.GET("/audiences/:id/history", a.audienceHistory)
	g.GET("/audiences/:id/members", a.members)
	g.PUT("/audiences/:id/members", editor, a.writeMembers(popup.AudienceReplace))
	g.POST("/audiences/:id/members/add", editor, a.writeMembers(popup.AudienceAdd))
	g.POST("/audiences/:id/members/remove", editor, a.writeMembers(popup.AudienceRemove))
	g.GET("/audiences/:id/members/:uid", a.member)
}

// AudienceService is the audience use case (manage.Audiences): its writes follow one path each,
// the role checked against the audience locked in the write's transaction.
type AudienceService interface {
	List(ctx context.Context) ([]popup.Audience, error)
	UsedBy(ctx context.Context) (map[int64][]popup.AudienceUser, error)
	Get(ctx context.Context, id int64) (popup.Audience, error)
	History(ctx context.Context, id int64) ([]popup.AudienceChange, error)
	Create(ctx context.Context, actor popup.Actor, m popup.AudienceMeta) (popup.Audience, error)
	Update(ctx context.Context, actor popup.Actor, id int64, m popup.AudienceMeta, ifVersion []int64) (popup.Audience, bool, error)
	Delete(ctx context.Context, actor popup.Actor, id int64, ifVersion []int64) (popup.Audience, error)
	WriteMembers(ctx context.Context, actor popup.Actor, id int64, action popup.AudienceAction, ifVersion []int64, src popup.MemberLines) (popup.MemberWrite, error)
	Members(ctx context.Context, id int64, open func(version int64) io.Writer) error
}

// AudienceSets gives the member set an instance serves for an audience (GET .../members/{uid}
// answers from it, as the decision does).
type AudienceSets interface {
	Current(ctx context.Context, id int64) (*audience.Set, error)
}

// audienceWire is an audience on the wire.
type audienceWire struct {
	ID          int64     `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Size        int64     `json:"size"`
	Version     int64     `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	// UsedBy are the popups that are not archived and target the audience, by id.
	UsedBy []int64 `json:"used_by"`
}

func audienceToWire(a popup.Audience, users []popup.AudienceUser) audienceWire {
	ids := make([]int64, len(users))
	for i, u := range users {
		ids[i] = u.ID
	}
	return audienceWire{ID: a.ID, Name: a.Name, Description: a.Description, Size: a.Size, Version: a.Version,
		CreatedAt: a.CreatedAt, UpdatedAt: a.UpdatedAt, UsedBy: ids}
}

// memberWriteWire is the answer of a member write: the audience as the write left it, the uids
// read (repeats included), the repeats among them, the blank lines skipped, a text upload's
// header line (null: none) and the members really added and removed.
type memberWriteWire struct {
	audienceWire
	Lines      int     `json:"lines"`
	Duplicates int     `json:"duplicates"`
	Blank      int     `json:"blank"`
	Header     *string `json:"header"`
	Added      int64   `json:"added"`
	Removed    int64   `json:"removed"`
}

type audienceChangeWire struct {
	Version int64     `json:"version"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Role    *string   `json:"role"`
	Action  string    `json:"action"`
	Added   int64     `json:"added"`
	Removed int64     `json:"removed"`
	Size    int64     `json:"size"`
}

// audienceMetaWire is the body of a create or an update.
type audienceMetaWire struct {
	Name        *string `json:"name"`
	Description string  `json:"description"`
	// The server's fields, as GET answers them, may be sent back and are ignored.
	ID         *int64     `json:"id"`
	Size       *int64     `json:"size"`
	Version    *int64     `json:"version"`
	CreatedAt  *time.Time `json:"created_at"`
	UpdatedAt  *time.Time `json:"updated_at"`
	UsedBy     []int64    `json:"used_by"`
	Lines      *int       `json:"lines"`
	Duplicates *int       `json:"duplicates"`
	Blank      *int       `json:"blank"`
	Header     *string    `json:"header"`
	Added      *int64     `json:"added"`
	Removed    *int64     `json:"removed"`
}

var (
	errMembersMediaType = httpapi.NewError(httpapi.Problem{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type",
		Message: "members are text/plain (one uid a line) or text/csv (a header row naming a uid column)"})
	errAudienceID = httpapi.BadRequest("invalid_audience_id", "audience id must be a positive integer")
)

func audienceID(c *gin.Context) (int64, *httpapi.Error) {
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return 0, errAudienceID
	}
	return id, nil
}

// readAudienceMeta reads the body of a create or an update; a body id other than pathID (0: a
// create) is refused.
func readAudienceMeta(c *gin.Context, pathID int64) (popup.AudienceMeta, error) {
	var in audienceMetaWire
	if aerr := httpapi.ReadSmallJSON(c, 16<<10, &in); aerr != nil {
		return popup.AudienceMeta{}, aerr
	}
	if in.Name == nil {
		return popup.AudienceMeta{}, &popup.ValidationError{Of: "audience", Fields: []popup.FieldError{{Field: "name", Message: "is required"}}}
	}
	if pathID != 0 && in.ID != nil && *in.ID != pathID {
		return popup.AudienceMeta{}, &popup.ValidationError{Of: "audience", Fields: []popup.FieldError{{Field: "id",
			Message: "must be " + strconv.FormatInt(pathID, 10) + ", the id in the path, or be left out"}}}
	}
	return popup.AudienceMeta{Name: *in.Name, Description: in.Description}, nil
}

// writeAudience answers one audience with its version as the ETag.
func (a *API) writeAudience(c *gin.Context, status int, au popup.Audience) {
	users, err := a.Audiences.UsedBy(c.Request.Context())
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.Header("ETag", httpapi.ETag(au.Version))
	c.JSON(status, audienceToWire(au, users[au.ID]))
}

// audienceWritten logs a committed audience write and, when it may change what popups serve,
// pushes it to every instance (as a popup write does).
func (a *API) audienceWritten(c *gin.Context, action popup.AudienceAction, au popup.Audience, propagate bool) {
	by := httpapi.Actor(c)
	a.Log.Info("audience written", "operator", by.Name, "role", by.Role.String(), "action", string(action), "audience_id", au.ID, "version", au.Version)
	if propagate {
		a.Propagate(c.Request.Context())
	}
}

func (a *API) createAudience(c *gin.Context) {
	m, err := readAudienceMeta(c, 0)
	if err != nil {
		a.Fail(c, err)
		return
	}
	au, err := a.Audiences.Create(c.Request.Context(), httpapi.Actor(c), m)
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.audienceWritten(c, popup.AudienceCreate, au, false)
	a.writeAudience(c, http.StatusCreated, au)
}

func (a *API) listAudiences(c *gin.Context) {
	ctx := c.Request.Context()
	all, err := a.Audiences.List(ctx)
	if err != nil {
		a.Fail(c, err)
		return
	}
	users, err := a.Audiences.UsedBy(ctx)
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]audienceWire, len(all))
	for i, au := range all {
		out[i] = audienceToWire(au, users[au.ID])
	}
	c.JSON(http.StatusOK, gin.H{"audiences": out})
}

func (a *API) getAudience(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	au, err := a.Audiences.Get(c.Request.Context(), id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.writeAudience(c, http.StatusOK, au)
}

func (a *API) updateAudience(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	m, err := readAudienceMeta(c, id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	au, changed, err := a.Audiences.Update(c.Request.Context(), httpapi.Actor(c), id, m, httpapi.IfMatch(c))
	if err != nil {
		a.Fail(c, err)
		return
	}
	if changed {
		a.audienceWritten(c, popup.AudienceUpdate, au, false)
	}
	a.writeAudience(c, http.StatusOK, au)
}

func (a *API) deleteAudience(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	au, err := a.Audiences.Delete(c.Request.Context(), httpapi.Actor(c), id, httpapi.IfMatch(c))
	if err != nil {
		a.Fail(c, err)
		return
	}
	a.audienceWritten(c, popup.AudienceDelete, au, true)
	c.Header("ETag", httpapi.ETag(au.Version))
	c.JSON(http.StatusOK, audienceToWire(au, nil))
}

// writeMembers answers PUT .../members (replace), POST .../members/add and .../members/remove:
// the body streams through the use case, never held whole.
func (a *API) writeMembers(action popup.AudienceAction) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, aerr := audienceID(c)
		if aerr != nil {
			a.Fail(c, aerr)
			return
		}
		column := c.Query("uid_column")
		body, aerr := sniffedReader(httpapi.BodyReader(c.Request.Body))
		if aerr != nil {
			a.Fail(c, aerr)
			return
		}
		var (
			src   popup.MemberLines
			blank func() int
			text  *TextMembers
		)
		switch c.ContentType() {
		case "text/plain":
			if column != "" {
				a.Fail(c, httpapi.QueryError("uid_column", "goes with text/csv: a text/plain upload has one uid a line"))
				return
			}
			text = TextLines(body)
			src, blank = text, func() int { return text.Blank }
		case "text/csv":
			csvm := CSVLines(body, column)
			src, blank = csvm, func() int { return csvm.Blank }
		default:
			a.Fail(c, errMembersMediaType)
			return
		}
		w, err := a.Audiences.WriteMembers(c.Request.Context(), httpapi.Actor(c), id, action, httpapi.IfMatch(c), src)
		if err != nil {
			a.Fail(c, err)
			return
		}
		a.audienceWritten(c, action, w.Audience, true)
		users, err := a.Audiences.UsedBy(c.Request.Context())
		if err != nil {
			a.Fail(c, err)
			return
		}
		c.Header("ETag", httpapi.ETag(w.Audience.Version))
		out := memberWriteWire{audienceWire: audienceToWire(w.Audience, users[id]), Lines: w.Lines, Duplicates: w.Duplicates,
			Blank: blank(), Added: w.Added, Removed: w.Removed}
		if text != nil && text.Header != "" {
			out.Header = &text.Header
		}
		c.JSON(http.StatusOK, out)
	}
}

// member answers GET .../members/{uid}: whether the set this instance serves holds uid.
func (a *API) member(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	uid := c.Param("uid")
	if !popup.ValidUID(uid) {
		a.Fail(c, httpapi.ErrUIDMalformed)
		return
	}
	set, err := a.AudienceSets.Current(c.Request.Context(), id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"member": set.Contains(uid), "version": set.Version()})
}

// members answers GET .../members: the members as text/plain, one uid a line, each once.
func (a *API) members(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	started := false
	err := a.Audiences.Members(c.Request.Context(), id, func(version int64) io.Writer {
		started = true
		c.Header("ETag", httpapi.ETag(version))
		c.Header("Content-Type", "text/plain; charset=utf-8")
		c.Status(http.StatusOK)
		return c.Writer
	})
	switch {
	case err == nil:
	case !started:
		a.Fail(c, err)
	default:
		// The answer has begun: it can only be cut short. Closing the connection before the final
		// chunk makes the client see a truncated body, never a shorter list that looks whole.
		a.Log.Error("stream audience members", "audience_id", id, "err", err)
		if conn, _, herr := http.NewResponseController(c.Writer).Hijack(); herr == nil {
			conn.Close()
		}
		c.Abort()
	}
}

func (a *API) audienceHistory(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		a.Fail(c, aerr)
		return
	}
	changes, err := a.Audiences.History(c.Request.Context(), id)
	if err != nil {
		a.Fail(c, err)
		return
	}
	out := make([]audienceChangeWire, len(changes))
	for i, ch := range changes {
		var role *string
		if ch.Actor.Role.Valid() {
			r := ch.Actor.Role.String()
			role = &r
		}
		out[i] = audienceChangeWire{Version: ch.Version, At: ch.At, Actor: ch.Actor.Name, Role: role, Action: string(ch.Action),
			Added: ch.Added, Removed: ch.Removed, Size: ch.Size}
	}
	c.JSON(http.StatusOK, gin.H{"changes": out})
}
