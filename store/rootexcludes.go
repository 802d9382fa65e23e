package store

import (
	"encoding/base64"
	"encoding/json"
	"unicode/utf8"
)

// A root's exclude patterns are kept as a JSON array. A pattern is a
// string there when it is UTF-8, and otherwise an object {"bytes": base64}
// of its bytes: JSON strings hold UTF-8 only, and json.Marshal had turned
// a byte no UTF-8 sequence holds into U+FFFD, so the pattern kept never
// matched the name it was written for. Arrays written before hold strings
// alone, and read as they did.

type patternBytes struct {
	Bytes string `json:"bytes"`
}

// encodeExcludes is the JSON the excludes column holds for ps.
func encodeExcludes(ps []string) (string, error) {
	out := make([]any, len(ps))
	for i, p := range ps {
		if utf8.ValidString(p) {
			out[i] = p
		} else {
			out[i] = patternBytes{base64.StdEncoding.EncodeToString([]byte(p))}
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// decodeExcludes reads what encodeExcludes wrote.
func decodeExcludes(s string) ([]string, error) {
	var raw []json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, err
	}
	ps := make([]string, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &ps[i]); err == nil {
			continue
		}
		var b patternBytes
		if err := json.Unmarshal(r, &b); err != nil {
			return nil, err
		}
		v, err := base64.StdEncoding.DecodeString(b.Bytes)
		if err != nil {
			return nil, err
		}
		ps[i] = string(v)
	}
	return ps, nil
}
