package httpapi

import (
	"bytes"
	"net/http"
)

// Upload sniffing: a spreadsheet or another binary file sent as members or as the translation
// table is refused before a line is read, saying how to save it as CSV.

// SniffLen is how much of an upload's start is looked at.
const SniffLen = 512

var (
	errSpreadsheetUpload = &Error{status: http.StatusUnsupportedMediaType, code: "not_text",
		message: "this file is a spreadsheet (Excel .xlsx or .xls, or OpenDocument .ods), not text: save it as CSV (in Excel: File > Save As > CSV UTF-8) and upload the .csv file"}
	errUTF16Upload = &Error{status: http.StatusUnsupportedMediaType, code: "not_text",
		message: "this file is UTF-16 text (Excel's \"Unicode Text\"): save it as CSV UTF-8 and upload that"}
	errBinaryUpload = &Error{status: http.StatusUnsupportedMediaType, code: "not_text",
		message: "this file is binary (it holds NUL bytes), not text: save it as CSV (UTF-8) and upload that"}
)

// SniffText refuses head, an upload's first bytes, when it is not text: a zip (xlsx, ods), an
// OLE compound file (xls), UTF-16, or anything else holding a NUL byte.
func SniffText(head []byte) *Error {
	switch {
	case bytes.HasPrefix(head, []byte("PK\x03\x04")), bytes.HasPrefix(head, []byte("\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1")):
		return errSpreadsheetUpload
	case bytes.HasPrefix(head, []byte("\xff\xfe")), bytes.HasPrefix(head, []byte("\xfe\xff")):
		return errUTF16Upload
	case bytes.IndexByte(head, 0) >= 0:
		return errBinaryUpload
	}
	return nil
}
