package store

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/internal/errdefs"
)

func TestTasks(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	if err := s.PutSandbox(ctx, minimalSandbox("sb1", t0)); err != nil {
		t.Fatal(err)
	}
	task := &Task{ID: "t1", SandboxID: "sb1", State: "open", Spec: json.RawMessage(`{"repo":"/r","commit":"abc"}`), Created: t0}
	if err := s.PutTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	if err := s.PutTask(ctx, task); !errors.Is(err, errdefs.ErrConflict) {
		t.Errorf("duplicate: %v", err)
	}
	orphan := *task
	orphan.ID, orphan.SandboxID = "t2", "nope"
	if err := s.PutTask(ctx, &orphan); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("task of an unknown sandbox: %v", err)
	}
	got, err := s.GetTask(ctx, "t1")
	want := *task
	want.Created = task.Created.UTC() // times come back in UTC
	if err != nil || !reflect.DeepEqual(got, &want) {
		t.Fatalf("get: %+v %v", got, err)
	}
	fin := t0.Add(time.Minute)
	task.State, task.Result, task.Finished = "finished", json.RawMessage(`{"passed":true}`), &fin
	if err := s.UpdateTask(ctx, task); err != nil {
		t.Fatal(err)
	}
	got, _ = s.GetTask(ctx, "t1")
	if got.State != "finished" || string(got.Result) != `{"passed":true}` || got.Finished == nil || !got.Finished.Equal(fin) {
		t.Errorf("after update: %+v", got)
	}
	if _, err := s.GetTask(ctx, "nope"); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("get unknown: %v", err)
	}
	missing := *task
	missing.ID = "nope"
	if err := s.UpdateTask(ctx, &missing); !errors.Is(err, errdefs.ErrNotFound) {
		t.Errorf("update unknown: %v", err)
	}
	list, err := s.ListTasks(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "t1" {
		t.Errorf("list: %+v %v", list, err)
	}
	bad := *task
	bad.ID, bad.Spec = "t3", json.RawMessage(`{not json`)
	if err := s.PutTask(ctx, &bad); !errors.Is(err, errdefs.ErrInvalid) {
		t.Errorf("bad spec: %v", err)
	}
}
