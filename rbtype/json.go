package rbtype

import (
	"bytes"
	"encoding/json"
)

// DecodeJSON decodes JSON the way plans and schemas expect: numbers as
// json.Number.
func DecodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}
