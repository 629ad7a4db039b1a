package iotrace

import (
	"strings"
	"testing"

	"github.com/kscope-dev/kscope/internal/lab/labtest"
)

// TestProbeFunctionMode: the probe answers, and its error (where fentry is
// refused, as on this project's machines) says why; nothing stays loaded.
func TestProbeFunctionMode(t *testing.T) {
	labtest.RequireRoot(t)
	m := ProbeFunctionMode()
	t.Logf("mode: %s", m)
	if !m.Tracepoints {
		t.Error("tracepoint mode not reported")
	}
	if len(m.Functions) == 0 && (m.FunctionsErr == nil || !strings.Contains(m.FunctionsErr.Error(), "ext4_file_write_iter")) {
		t.Errorf("no reason given for refusing fentry: %v", m.FunctionsErr)
	}
}
