package kafka

import (
	"net/http"
	"testing"
)

// A token endpoint that redirects off https is not followed: the client
// secret would go along in clear.
func TestTokenRedirectsKeepTLS(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://idp.example.com/token": true,
		"http://127.0.0.1:9/token":      true,
		"http://idp.example.com/token":  false,
	} {
		req, err := http.NewRequest(http.MethodPost, u, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameRule(req, nil); (err == nil) != ok {
			t.Errorf("redirect to %s: %v", u, err)
		}
	}
}
