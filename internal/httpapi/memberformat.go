// Member upload formats (docs/CONTRACT.md §11): the bodies of the member writes, read as they
// stream in.

package httpapi

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"strings"

	"popupsvc/internal/popup"
)

// maxLine bounds what a line may take in memory: a uid is at most 64 characters, so a longer
// line is bad whatever it holds and only its start is kept.
const maxLine = 64 << 10

// TextLines reads text/plain: one uid a line; a trailing newline, blank lines and CRLF endings
// are fine.
func TextLines(r io.Reader) popup.MemberLines { return &textLines{r: bufio.NewReaderSize(r, maxLine)} }

type textLines struct {
	r    *bufio.Reader
	line int
}

func (t *textLines) Next() ([]byte, int, error) {
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
		b = bytes.TrimSuffix(bytes.TrimSuffix(b, []byte{'\n'}), []byte{'\r'})
		if len(bytes.TrimSpace(b)) == 0 {
			if err == io.EOF {
				return nil, 0, io.EOF
			}
			continue
		}
		return b, t.line, nil
	}
}

// CSVLines reads text/csv (RFC 4180): a header row naming a uid column, then one record a user;
// other columns are ignored. A record too long to hold a uid, a broken quote or a missing uid
// column is a *SyntaxError.
func CSVLines(r io.Reader) popup.MemberLines {
	lim := &recordLimit{r: r}
	cr := csv.NewReader(lim)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	return &csvLines{r: cr, lim: lim, col: -1}
}

type csvLines struct {
	r   *csv.Reader
	lim *recordLimit
	col int // the uid column, -1 before the header
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

func (c *csvLines) Next() ([]byte, int, error) {
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
		if c.col < 0 {
			for i, name := range rec {
				if i == 0 {
					name = strings.TrimPrefix(name, "\ufeff") // a byte-order mark some spreadsheets write
				}
				if strings.EqualFold(strings.TrimSpace(name), "uid") {
					c.col = i
					break
				}
			}
			if c.col < 0 {
				line, _ := c.r.FieldPos(0)
				return nil, 0, &popup.MemberSyntaxError{Line: line, Message: "the header row names no uid column"}
			}
			continue
		}
		line, _ := c.r.FieldPos(0)
		if c.col >= len(rec) {
			return []byte{}, line, nil // no uid field: a bad line
		}
		line, _ = c.r.FieldPos(c.col)
		return []byte(rec[c.col]), line, nil
	}
}
