package redact

import (
	"encoding/json"
	"testing"
)

func TestJSON(t *testing.T) {
	r := New(plainSecret, "90817263")
	tests := []struct {
		name, in, want string
	}{
		{"value by key", `{"password":"hunter2hunter2","user":"bob"}`, `{"password":"[REDACTED:generic-api-key]","user":"bob"}`},
		{"known value", `{"msg":"login with ` + plainSecret + `"}`, `{"msg":"login with [REDACTED:known-secret]"}`},
		{"key", `{"` + plainSecret + `":true}`, `{"[REDACTED:known-secret]":true}`},
		{
			"two keys become one marker",
			`{"` + plainSecret + `":1,"x` + plainSecret + `":2}`,
			`{"[REDACTED:known-secret]":1,"x[REDACTED:known-secret]":2}`,
		},
		{
			"layout, order and numbers kept",
			"{\n  \"z\" : [1, -2.5e3, \"" + ghToken + "\", null],\n  \"a\": {\"token_type\": \"bearer\"}\n}",
			"{\n  \"z\" : [1, -2.5e3, \"[REDACTED:github-token]\", null],\n  \"a\": {\"token_type\": \"bearer\"}\n}",
		},
		{"aws sts", `{"Credentials":{"AccessKeyId":"` + awsKeyID + `","SecretAccessKey":"` + awsSecret + `"}}`,
			`{"Credentials":{"AccessKeyId":"[REDACTED:aws-access-key]","SecretAccessKey":"[REDACTED:aws-secret-key]"}}`},
		{"number by key", `{"password": 987654321}`, `{"password": "[REDACTED:generic-api-key]"}`},
		{"known number", `[90817263, 123]`, `["[REDACTED:known-secret]", 123]`},
		{"escapes kept when clean", `{"a":"line\nbreak \u00e9 \"q\""}`, `{"a":"line\nbreak \u00e9 \"q\""}`},
		{"escaped value", `{"a":"\u0068unter2-sekrit <b>"}`, `{"a":"[REDACTED:known-secret] <b>"}`},
		{"scalar", `"` + jwtToken + `"`, `"[REDACTED:jwt]"`},
		{"short value kept", `{"password":"x"}`, `{"password":"x"}`},
		{"invalid", "not json " + ghToken, `"not json [REDACTED:github-token]"`},
		{"truncated", `{"password":"hunter2hunter2`, `"{\"password\":\"[REDACTED:generic-api-key]"`},
		{"empty", "", `""`},
		{"invalid utf8", "\xff" + plainSecret, `"\ufffd[REDACTED:known-secret]"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := r.JSON([]byte(tt.in))
			if string(got) != tt.want {
				t.Errorf("JSON(%s)\n got %s\nwant %s", tt.in, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("JSON(%s) = %s, not valid JSON", tt.in, got)
			}
		})
	}
}

// An attack: a value any caller can teach (a secret-named variable's)
// that is a field's name must not hide that field of every document
// (the key was redacted: "sandbox_id" became a marker in every audit
// payload); the value is still redacted where it is a value, and a key
// not shaped like a field's name still is.
func TestJSONKeepsFieldNames(t *testing.T) {
	r := New("sandbox_id", "stdout_bytes", "Team-Secret-Key")
	in := `{"sandbox_id":"sandbox_id","stdout_bytes":3,"labels":{"Team-Secret-Key":"v"},"Sandbox_ID":1}`
	want := `{"sandbox_id":"[REDACTED:known-secret]","stdout_bytes":3,"labels":{"[REDACTED:known-secret]":"v"},"Sandbox_ID":1}`
	if got := string(r.JSON([]byte(in))); got != want {
		t.Errorf("JSON(%s)\n got %s\nwant %s", in, got, want)
	}
	for key, want := range map[string]bool{"sandbox_id": true, "a": true, "x9_": true, "Sandbox": false, "9a": false, "a-b": false, "": false,
		"a" + string(make([]byte, 64)): false} {
		if FieldName(key) != want {
			t.Errorf("FieldName(%q) = %v", key, !want)
		}
	}
}
