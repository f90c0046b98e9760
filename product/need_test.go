package product

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNeedRequest_MarshalJSON(t *testing.T) {
	src := MustReadFile(t, "../fixtures/need-context.json")
	req, err := DecodeNeedRequest(src)
	if err != nil {
		t.Fatal(err)
	}
	out, err := req.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeNeedRequest(out)
	if err != nil {
		t.Fatalf("re-decoding %s: %v", out, err)
	}
	if diff := cmp.Diff(req, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}
