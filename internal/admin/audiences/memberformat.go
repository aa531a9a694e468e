// Member upload formats (docs/CONTRACT.md §11): the bodies of the member writes, read as they
// stream in.

package audiences

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strconv"
	"strings"

	"popupsvc/internal/httpapi"
	"popupsvc/internal/popup"
)

// maxLine bounds what a line may take in memory: a uid is at most 64 characters, so a longer
// line is bad whatever it holds and only its start is kept.
const maxLine = 64 << 10

// TextLines reads text/plain: one uid a line, spaces and tabs around it ignored; a trailing
// newline, blank lines (counted) and CRLF endings are fine. A first line that names a column
// (HeaderName) is a header, not a member.
func TextLines(r io.Reader) *TextMembers { return &TextMembers{r: bufio.NewReaderSize(r, maxLine)} }

// TextMembers is a text/plain upload as it streams in (popup.MemberLines).
type TextMembers struct {
	r    *bufio.Reader
	line int
	// Blank counts the blank lines read; Header is the first line when it was a header.
	Blank  int
	Header string
}

// HeaderName reports whether the first line of a text upload names a column rather than a
// member: "uid", "uids" or "id", or a name ending in "_id", "-id", ".id" or " id", or in "Id" or
// "ID" after a lower-case letter (customer_id, user-id, userId, customerID), with no digit in it.
// A uid such as "david" or "user_1_id" is not a header.
func HeaderName(b []byte) bool {
	if bytes.ContainsAny(b, "0123456789") {
		return false
	}
	low := strings.ToLower(string(b))
	switch {
	case low == "uid" || low == "uids" || low == "id":
		return true
	case len(b) > 3 && strings.HasSuffix(low, "id") && strings.ContainsRune("_-. ", rune(b[len(b)-3])):
		return true
	case len(b) > 2 && b[len(b)-2] == 'I' && (b[len(b)-1] == 'd' || b[len(b)-1] == 'D') && b[len(b)-3] >= 'a' && b[len(b)-3] <= 'z':
		return true
	}
	return false
}

// Next yields the next uid (popup.MemberLines).
func (t *TextMembers) Next() ([]byte, int, error) {
	for {
		b, err := t.r.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line too long to be a uid: yield its start (which no uid matches) and skip the
			// rest of it.
			b = bytes.Clone(b)
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = t.r.ReadSlice('\n')
			}
			if err != nil && err != io.EOF {
				return nil, 0, err
			}
			t.line++
			return b, t.line, nil
		}
		if err != nil && (err != io.EOF || len(b) == 0) {
			return nil, 0, err
		}
		t.line++
		b = bytes.TrimSpace(b) // the newline, a CR, and spaces or tabs around the uid
		if len(b) == 0 {
			if err == io.EOF {
				return nil, 0, io.EOF
			}
			t.Blank++
			continue
		}
		if t.line == 1 && HeaderName(b) {
			t.Header = string(b)
			continue
		}
		return b, t.line, nil
	}
}

// CSVLines reads text/csv (RFC 4180): a header row naming the uid column (column, or "uid" when
// column is ""; compared without case and surrounding spaces), then one record a user; other
// columns are ignored, spaces around the uid too. A record too long to hold a uid, a broken quote
// or a missing uid column (the error names the columns found) is a *MemberSyntaxError.
func CSVLines(r io.Reader, column string) *CSVMembers {
	lim := &recordLimit{r: r}
	cr := csv.NewReader(lim)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	if column = strings.TrimSpace(column); column == "" {
		column = "uid"
	}
	return &CSVMembers{r: cr, lim: lim, col: -1, column: column}
}

// CSVMembers is a text/csv upload as it streams in (popup.MemberLines).
type CSVMembers struct {
	r      *csv.Reader
	lim    *recordLimit
	col    int    // the uid column, -1 before the header
	column string // its name
	last   int    // the line the last record's last field began on
	// Blank counts the blank lines between records.
	Blank int
}

// recordLimit fails a read once more than maxRecord bytes went into one record: encoding/csv
// holds a record whole, so an endless quoted field would otherwise take all memory.
type recordLimit struct {
	r io.Reader
	n int
}

const maxRecord = 1 << 20

var errRecordTooLong = errors.New("record over 1 MiB")

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.n > maxRecord {
		return 0, errRecordTooLong
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}

// Next yields the next uid (popup.MemberLines).
func (c *CSVMembers) Next() ([]byte, int, error) {
	for {
		// bufio in the csv reader reads ahead: the count covers at most a buffer more than the
		// record itself.
		c.lim.n = 0
		rec, err := c.r.Read()
		if err != nil {
			var pe *csv.ParseError
			switch {
			case err == io.EOF && c.col < 0:
				return nil, 0, &popup.MemberSyntaxError{Line: 1, Message: "no header row: the first row must name the columns, one of them uid"}
			case err == io.EOF:
				return nil, 0, io.EOF
			case errors.As(err, &pe):
				return nil, 0, &popup.MemberSyntaxError{Line: pe.Line, Message: pe.Err.Error()}
			case errors.Is(err, errRecordTooLong):
				line, _ := c.r.FieldPos(0)
				return nil, 0, &popup.MemberSyntaxError{Line: line + 1, Message: "record over 1 MiB"}
			}
			return nil, 0, err
		}
		first, _ := c.r.FieldPos(0)
		c.Blank += max(0, first-c.last-1)
		c.last, _ = c.r.FieldPos(len(rec) - 1)
		if c.col < 0 {
			names := make([]string, len(rec))
			for i, name := range rec {
				if i == 0 {
					name = strings.TrimPrefix(name, "\ufeff") // a byte-order mark some spreadsheets write
				}
				names[i] = strings.TrimSpace(name)
				if c.col < 0 && strings.EqualFold(names[i], c.column) {
					c.col = i
				}
			}
			if c.col < 0 {
				return nil, 0, &popup.MemberSyntaxError{Line: first, Message: noColumn(c.column, names), Columns: names}
			}
			continue
		}
		if c.col >= len(rec) {
			return []byte{}, first, nil // no uid field: a bad line
		}
		line, _ := c.r.FieldPos(c.col)
		return bytes.TrimSpace([]byte(rec[c.col])), line, nil
	}
}

// noColumn says that the header row has no column named column, and which it has.
func noColumn(column string, names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = strconv.Quote(n)
	}
	if column == "uid" {
		return "the header row names no uid column; its columns are " + strings.Join(quoted, ", ") +
			": name the one that holds the uids with the uid_column parameter"
	}
	return "the header row has no column " + strconv.Quote(column) + " (uid_column); its columns are " + strings.Join(quoted, ", ")
}

// sniffedReader is r read through a buffer after httpapi.SniffText passed its start; a start that could
// not be read is left for the reader's first Read to report.
func sniffedReader(r io.Reader) (*bufio.Reader, *httpapi.Error) {
	br := bufio.NewReaderSize(r, maxLine)
	head, _ := br.Peek(httpapi.SniffLen)
	return br, httpapi.SniffText(head)
}
