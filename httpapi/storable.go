package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// checkStorable refuses, with 400 and the field's name, a body holding a
// value PostgreSQL cannot store: text that is not UTF-8, a NUL character
// (\u0000) in a string or a key, which neither text nor jsonb takes, or a
// number that overflows or underflows a float64 (1e999999), which
// numeric and the runtime's checks cannot take either. Without it each
// reaches the database and fails there as a 500. It runs on every JSON
// body, after it has decoded, so a malformed body is reported as such.
func checkStorable(body []byte) error {
	if !utf8.Valid(body) {
		line, col := position(body, int64(firstInvalidUTF8(body)))
		return errorf(http.StatusBadRequest, CodeMalformedJSON, "the body is not valid UTF-8, at line %d, column %d", line, col)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if msg, field := storable(dec, ""); msg != "" {
		if field == "" {
			return errorf(http.StatusBadRequest, CodeInvalidRequest, "the body %s", msg)
		}
		return errorf(http.StatusBadRequest, CodeInvalidRequest, "field %q %s", field, msg)
	}
	return nil
}

// storable walks one JSON value, returning what is wrong with the first
// value that cannot be stored and the path of its field (result.items[2]).
func storable(dec *json.Decoder, path string) (msg, field string) {
	tok, err := dec.Token()
	if err != nil {
		return "", "" // the body has decoded once already; nothing to add
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return "", ""
				}
				key, _ := kt.(string)
				if strings.ContainsRune(key, 0) {
					return "has a key holding a NUL character (\\u0000), which cannot be stored", path
				}
				if msg, field := storable(dec, joinField(path, key)); msg != "" {
					return msg, field
				}
			}
		case '[':
			for i := 0; dec.More(); i++ {
				if msg, field := storable(dec, fmt.Sprintf("%s[%d]", path, i)); msg != "" {
					return msg, field
				}
			}
		}
		_, _ = dec.Token() // the closing delimiter
	case string:
		if strings.ContainsRune(v, 0) {
			return "holds a NUL character (\\u0000), which cannot be stored", path
		}
	case json.Number:
		if !finiteNumber(string(v)) {
			return fmt.Sprintf("is %.40s, a number out of range (at most about 1.8e308 and at least 2.3e-308 in size)", v), path
		}
	}
	return "", ""
}

// finiteNumber reports whether a JSON number is a float64 other than an
// overflow to infinity or a non-zero number that underflows to zero.
func finiteNumber(s string) bool {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return false
	}
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	return f != 0 || !strings.ContainsAny(mantissa, "123456789")
}

func joinField(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// firstInvalidUTF8 is the offset of the first byte that is not UTF-8.
func firstInvalidUTF8(b []byte) int {
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return i
		}
		i += size
	}
	return len(b)
}
