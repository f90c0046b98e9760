package product

import "testing"

// TestDecodePatchReport: a report naming criteria that do not exist, or one
// twice, is no report (and cannot index out of the criteria).
func TestDecodePatchReport(t *testing.T) {
	for _, tc := range []struct {
		raw string
		ok  bool
	}{
		{`{"summary":"s","criteria":[{"criterion":1,"addressed":true,"note":"n"}],"risks":[]}`, true},
		{`{"summary":"s","criteria":[{"criterion":2,"addressed":true,"note":"n"}],"risks":[]}`, false},
		{`{"summary":"s","criteria":[{"criterion":1,"addressed":true,"note":"n"},{"criterion":1,"addressed":false,"note":""}],"risks":[]}`, false},
		{`{"summary":"s","criteria":[],"risks":[],"extra":1}`, false},
		{`not json`, false},
	} {
		r := decodePatchReport(tc.raw, 1)
		if (r != nil) != tc.ok {
			t.Errorf("decodePatchReport(%s) = %v", tc.raw, r)
		}
		_ = coverage(changeRequest{Criteria: []string{"c"}}, r)
	}
}
