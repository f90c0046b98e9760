package testrun

import (
	"bytes"
	"strings"
	"testing"
)

func TestEventLog(t *testing.T) {
	stream := strings.Join([]string{
		`{"Action":"start","Package":"example.com/reach"}`,
		`{"Action":"run","Package":"example.com/reach","Test":"TestM"}`,
		`{"Action":"output","Package":"example.com/reach","Test":"TestM","Output":"=== RUN   TestM\n"}`,
		`{"Action":"run","Package":"example.com/reach","Test":"TestM/a"}`,
		`{"Action":"output","Package":"example.com/reach","Test":"TestM/a","Output":"--- PASS: TestM/a (0.00s)\n"}`,
		`{"Action":"pass","Package":"example.com/reach","Test":"TestM/a"}`,
		`not json: a test printed this with -json framing broken`,
		`{"Action":"fail","Package":"example.com/reach","Test":"TestM"}`,
		`{"Action":"output","Package":"example.com/reach","Output":"FAIL\n"}`,
		`{"Action":"fail","Package":"example.com/reach"}`,
	}, "\n") + "\n"
	l := newEventLog(1 << 10)
	if err := l.read(strings.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if l.tests["TestM/a"] != "pass" || l.tests["TestM"] != "fail" || l.pkgAction != "fail" || !l.ran["TestM/a"] {
		t.Errorf("tests %v, package %q", l.tests, l.pkgAction)
	}
	if l.malformed != 1 || l.build || l.timeout {
		t.Errorf("malformed %d, build %v, timeout %v", l.malformed, l.build, l.timeout)
	}
	if got := l.output.String(); got != "=== RUN   TestM\n--- PASS: TestM/a (0.00s)\nFAIL\n" {
		t.Errorf("output %q", got)
	}
	if l.bytes != int64(len(stream)) || len(l.digest()) != 64 {
		t.Errorf("hashed %d of %d bytes", l.bytes, len(stream))
	}

	t.Run("Build", func(t *testing.T) {
		l := newEventLog(1 << 10)
		_ = l.read(strings.NewReader(`{"ImportPath":"example.com/reach","Action":"build-output","Output":"x.go:1: bad\n"}` + "\n" + `{"ImportPath":"example.com/reach","Action":"build-fail"}` + "\n"))
		if !l.build || l.output.String() != "x.go:1: bad\n" {
			t.Errorf("build %v, output %q", l.build, l.output.String())
		}
	})
	t.Run("Timeout", func(t *testing.T) {
		l := newEventLog(1 << 10)
		_ = l.read(strings.NewReader(`{"Action":"output","Package":"p","Output":"panic: test timed out after 1s\n"}` + "\n"))
		if !l.timeout {
			t.Error("timeout not seen")
		}
	})
	t.Run("Bounds", func(t *testing.T) {
		l := newEventLog(16)
		l.maxLine = 100
		long := `{"Action":"output","Output":"` + strings.Repeat("x", 500) + `"}`
		in := long + "\n" + `{"Action":"output","Output":"0123456789abcdefghij"}` + "\n" + `{"Action":"pass","Test":"TestX"}`
		if err := l.read(strings.NewReader(in)); err != nil {
			t.Fatal(err)
		}
		if l.malformed != 1 || len(l.output.Bytes()) != 16 || !l.output.Truncated() || l.tests["TestX"] != "pass" {
			t.Errorf("malformed %d, output %q (truncated %v), tests %v", l.malformed, l.output.String(), l.output.Truncated(), l.tests)
		}
	})
}

func FuzzEventLog(f *testing.F) {
	f.Add([]byte(`{"Action":"pass","Test":"TestX"}` + "\n"))
	f.Add([]byte(`{"Action":"output","Output":"panic: test timed out after 1s\n"}`))
	f.Add([]byte("\n\n{}\n{\"Action\":\"run\",\"Test\":\"\"}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		l := newEventLog(64)
		l.maxLine = 256
		if err := l.read(bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if len(l.output.Bytes()) > 64 || l.bytes != int64(len(data)) {
			t.Fatalf("output %d bytes, hashed %d of %d", len(l.output.Bytes()), l.bytes, len(data))
		}
		for name, action := range l.tests {
			if name == "" || (action != "pass" && action != "fail" && action != "skip") {
				t.Fatalf("test %q → %q", name, action)
			}
		}
	})
}
