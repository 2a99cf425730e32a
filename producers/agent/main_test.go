package agent_test

import (
	"os"
	"testing"

	"github.com/vmplane/vmplane/internal/testkit"
)

// TestMain lets the test binary serve as the broker process of the tests
// that kill one (testkit.StartBrokerProcess).
func TestMain(m *testing.M) {
	testkit.BrokerMain()
	os.Exit(m.Run())
}
