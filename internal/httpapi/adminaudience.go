package httpapi

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"popupsvc/internal/audience"
	"popupsvc/internal/popup"
)

// Audiences on the admin API (docs/CONTRACT.md §11): uploaded lists of users that popups target.

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
	errMembersMediaType = &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
		message: "members are text/plain (one uid a line) or text/csv (a header row naming a uid column)"}
	errAudienceID = badRequest("invalid_audience_id", "audience id must be a positive integer")
)

func audienceID(c *gin.Context) (int64, *apiError) {
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
	if aerr := readSmallJSON(c, 16<<10, &in); aerr != nil {
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
func (a *Admin) writeAudience(c *gin.Context, status int, au popup.Audience) {
	users, err := a.Audiences.UsedBy(c.Request.Context())
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	c.Header("ETag", etag(au.Version))
	c.JSON(status, audienceToWire(au, users[au.ID]))
}

// audienceWritten logs a committed audience write and, when it may change what popups serve,
// pushes it to every instance (as a popup write does).
func (a *Admin) audienceWritten(c *gin.Context, action popup.AudienceAction, au popup.Audience, propagate bool) {
	by := actor(c)
	a.Log.Info("audience written", "operator", by.Name, "role", by.Role.String(), "action", string(action), "audience_id", au.ID, "version", au.Version)
	if propagate {
		a.propagate(c.Request.Context())
	}
}

func (a *Admin) createAudience(c *gin.Context) {
	m, err := readAudienceMeta(c, 0)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	au, err := a.Audiences.Create(c.Request.Context(), actor(c), m)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.audienceWritten(c, popup.AudienceCreate, au, false)
	a.writeAudience(c, http.StatusCreated, au)
}

func (a *Admin) listAudiences(c *gin.Context) {
	ctx := c.Request.Context()
	all, err := a.Audiences.List(ctx)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	users, err := a.Audiences.UsedBy(ctx)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	out := make([]audienceWire, len(all))
	for i, au := range all {
		out[i] = audienceToWire(au, users[au.ID])
	}
	c.JSON(http.StatusOK, gin.H{"audiences": out})
}

func (a *Admin) getAudience(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	au, err := a.Audiences.Get(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.writeAudience(c, http.StatusOK, au)
}

func (a *Admin) updateAudience(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	m, err := readAudienceMeta(c, id)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	au, changed, err := a.Audiences.Update(c.Request.Context(), actor(c), id, m, ifMatch(c))
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	if changed {
		a.audienceWritten(c, popup.AudienceUpdate, au, false)
	}
	a.writeAudience(c, http.StatusOK, au)
}

func (a *Admin) deleteAudience(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	au, err := a.Audiences.Delete(c.Request.Context(), actor(c), id, ifMatch(c))
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	a.audienceWritten(c, popup.AudienceDelete, au, true)
	c.Header("ETag", etag(au.Version))
	c.JSON(http.StatusOK, audienceToWire(au, nil))
}

// bodyError is a failure to read a request body as it streams in (the client went away, the
// listener's read timeout): a 400, not a 500.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "read the request body: " + e.err.Error() }

type bodyReader struct{ r io.Reader }

func (b bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		err = &bodyError{err: err}
	}
	return n, err
}

// writeMembers answers PUT .../members (replace), POST .../members/add and .../members/remove:
// the body streams through the use case, never held whole.
func (a *Admin) writeMembers(action popup.AudienceAction) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, aerr := audienceID(c)
		if aerr != nil {
			writeError(c, a.Log, aerr)
			return
		}
		column := c.Query("uid_column")
		body, aerr := sniffedReader(bodyReader{r: c.Request.Body})
		if aerr != nil {
			writeError(c, a.Log, aerr)
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
				writeError(c, a.Log, queryError("uid_column", "goes with text/csv: a text/plain upload has one uid a line"))
				return
			}
			text = TextLines(body)
			src, blank = text, func() int { return text.Blank }
		case "text/csv":
			csvm := CSVLines(body, column)
			src, blank = csvm, func() int { return csvm.Blank }
		default:
			writeError(c, a.Log, errMembersMediaType)
			return
		}
		w, err := a.Audiences.WriteMembers(c.Request.Context(), actor(c), id, action, ifMatch(c), src)
		if err != nil {
			writeError(c, a.Log, err)
			return
		}
		a.audienceWritten(c, action, w.Audience, true)
		users, err := a.Audiences.UsedBy(c.Request.Context())
		if err != nil {
			writeError(c, a.Log, err)
			return
		}
		c.Header("ETag", etag(w.Audience.Version))
		out := memberWriteWire{audienceWire: audienceToWire(w.Audience, users[id]), Lines: w.Lines, Duplicates: w.Duplicates,
			Blank: blank(), Added: w.Added, Removed: w.Removed}
		if text != nil && text.Header != "" {
			out.Header = &text.Header
		}
		c.JSON(http.StatusOK, out)
	}
}

// member answers GET .../members/{uid}: whether the set this instance serves holds uid.
func (a *Admin) member(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	uid := c.Param("uid")
	if !popup.ValidUID(uid) {
		writeError(c, a.Log, errUIDMalformed)
		return
	}
	set, err := a.AudienceSets.Current(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.Log, err)
		return
	}
	c.JSON(http.StatusOK, gin.H{"member": set.Contains(uid), "version": set.Version()})
}

// members answers GET .../members: the members as text/plain, one uid a line, each once.
func (a *Admin) members(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	started := false
	err := a.Audiences.Members(c.Request.Context(), id, func(version int64) io.Writer {
		started = true
		c.Header("ETag", etag(version))
		c.Header("Content-Type", "text/plain; charset=utf-8")
		c.Status(http.StatusOK)
		return c.Writer
	})
	switch {
	case err == nil:
	case !started:
		writeError(c, a.Log, err)
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

func (a *Admin) audienceHistory(c *gin.Context) {
	id, aerr := audienceID(c)
	if aerr != nil {
		writeError(c, a.Log, aerr)
		return
	}
	changes, err := a.Audiences.History(c.Request.Context(), id)
	if err != nil {
		writeError(c, a.Log, err)
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

// audienceAnswer is the answer to an audience error that carries more than a message.
func audienceAnswer(err error) (*apiError, bool) {
	var (
		bad  *popup.InvalidMembersError
		many *popup.TooManyMembersError
		mem  *popup.AudienceMemoryError
		use  *popup.AudienceInUseError
		body *bodyError
	)
	switch {
	case errors.As(err, &bad):
		lines := make([]gin.H, len(bad.Lines))
		for i, l := range bad.Lines {
			lines[i] = gin.H{"line": l.Line, "message": l.Message}
		}
		extra := gin.H{"lines": lines, "bad_lines": bad.Total}
		if bad.Columns != nil {
			extra["columns"] = bad.Columns // a CSV header without the uid column: the columns to choose from
		}
		return &apiError{status: codeStatus[bad.Code()], code: string(bad.Code()), message: bad.Message(), extra: extra}, true
	case errors.As(err, &many):
		return &apiError{status: codeStatus[many.Code()], code: string(many.Code()),
			message: "more than " + strconv.Itoa(many.Limit) + " distinct uids: the limit of one " + string(many.Action) + " is " + strconv.Itoa(many.Limit),
			extra:   gin.H{"limit": many.Limit}}, true
	case errors.As(err, &mem):
		return &apiError{status: codeStatus[mem.Code()], code: string(mem.Code()),
			message: "refused: every audience's members would be " + strconv.FormatInt(mem.Members, 10) + ", whose sets take " +
				strconv.FormatInt(mem.Need, 10) + " bytes in every instance, over POPUP_AUDIENCE_MEMORY (" + strconv.FormatInt(mem.Limit, 10) + " bytes)",
			extra: gin.H{"limit_bytes": mem.Limit, "needed_bytes": mem.Need}}, true
	case errors.As(err, &use):
		popups := make([]gin.H, len(use.Popups))
		for i, p := range use.Popups {
			popups[i] = gin.H{"id": p.ID, "name": p.Name, "status": string(p.Status)}
		}
		return &apiError{status: codeStatus[use.Code()], code: string(use.Code()), message: use.Error(), extra: gin.H{"popups": popups}}, true
	case errors.As(err, &body):
		return badRequest("invalid_body", "could not read the request body: "+body.err.Error()), true
	}
	return nil, false
}
