package doctor

import (
	"testing"
	"time"
)

// doctor's requests (a cloud's token count and probes among them) go
// through a transport that signs for clouds, and says so.
func TestDoctorTransportSignsForClouds(t *testing.T) {
	rt := Options{Timeout: time.Second, Now: time.Now}.transport()
	if s, ok := rt.(interface{ AuthorizesClouds() bool }); !ok || !s.AuthorizesClouds() {
		t.Fatalf("doctor's transport %T does not sign for clouds", rt)
	}
	if _, ok := rt.(credentialSource); !ok {
		t.Fatalf("doctor's transport %T names no credential sources", rt)
	}
}
