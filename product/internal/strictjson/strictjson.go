// Package strictjson decodes JSON that Needle reads from what it does not
// trust (a model, a user, a program of the repository's) into a Go type:
// exactly one value, no field the type lacks, nothing after it.
package strictjson

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// Decode decodes the one JSON value of data into v.
func Decode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the JSON value")
	}
	return nil
}
