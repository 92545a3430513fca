package lazyre

import "testing"

func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a+b$`)
	if !re().MatchString("aaab") || re().MatchString("ba") {
		t.Fatal("wrong expression compiled")
	}
	first := re()
	if again := re(); again != first {
		t.Fatal("compiled more than once")
	}
}

func TestCompileAllPanicsOnABadExpression(t *testing.T) {
	bad := New(`(`)
	defer func() {
		mu.Lock()
		all = all[:len(all)-1] // leave the registry as it was
		mu.Unlock()
		if recover() == nil {
			t.Fatal("CompileAll accepted an invalid expression")
		}
	}()
	_ = bad
	CompileAll()
}

func TestABadExpressionPanicsOnEveryCall(t *testing.T) {
	bad := New(`(`)
	defer func() {
		mu.Lock()
		all = all[:len(all)-1] // leave the registry as it was
		mu.Unlock()
	}()
	for i := 0; i < 2; i++ {
		func() {
			defer func() {
				if recover() == nil {
					t.Fatalf("call %d of an invalid expression did not panic", i+1)
				}
			}()
			bad()
		}()
	}
}
