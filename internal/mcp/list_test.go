package mcp

import (
	"context"
	"encoding/json"
	"testing"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// tools/list, as the Go SDK's client receives it, stays under 3k tokens
// (bytes/4) with every tool, and every tool has a title, annotations and
// an input schema refusing unknown properties.
func TestToolsListBudget(t *testing.T) {
	srv := (&Server{Version: "test"}).server()
	ct, st := mcpsdk.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res.Tools)
	t.Logf("tools/list: %d tools, %d bytes, about %d tokens", len(res.Tools), len(b), len(b)/4)
	if len(b)/4 >= 3000 {
		t.Errorf("tools/list is about %d tokens", len(b)/4)
	}
	for _, tl := range res.Tools {
		in, _ := json.Marshal(tl.InputSchema)
		var schema struct {
			Additional *bool `json:"additionalProperties"`
		}
		_ = json.Unmarshal(in, &schema)
		if tl.Title == "" || tl.Annotations == nil || tl.Annotations.OpenWorldHint == nil || schema.Additional == nil || *schema.Additional {
			t.Errorf("%s: title %q, annotations %+v, schema %s", tl.Name, tl.Title, tl.Annotations, in)
		}
	}
}
