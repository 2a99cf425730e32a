package schemas

// Error codes of a job that did not succeed: the closed set that
// JobFailed.reason and JobRejected.reason are taken from, and the error_code
// the read model and the journal show beside a job's message (its detail, or
// a cancelled job's reason). Analysts group by it; the text beside it says
// the rest. docs/design.md §5.3 has the table. A new code is added here, to
// ErrorCodes and to that table, never made up at the call site. The VM
// processor's scenario tests (checkReason), the host and lease processors'
// tests and the simulation's checks hold every reason they see emitted to
// this set.
const (
	// Failures (JobFailed).
	CodeTimeout              = "Timeout"
	CodePlacementFailed      = "PlacementFailed"
	CodeAgentError           = "AgentError"
	CodeUnexpectedPowerState = "UnexpectedPowerState"
	CodeUnexpectedHost       = "UnexpectedHost"
	CodeHostDown             = "HostDown"
	CodeErrorInMaintenance   = "ErrorInMaintenance"
	CodeInternal             = "Internal"
	// CodeCancelled is every JobCancelled's code, and a JobFailed's of a
	// job stopped by a cancel before its end.
	CodeCancelled = "Cancelled"

	// Rejections (JobRejected).
	CodeInvalid       = "Invalid"
	CodeNotFound      = "NotFound"
	CodeAlreadyExists = "AlreadyExists"
	CodeInvalidState  = "InvalidState"

	// CodeUnknown stands for a reason outside the set, which no writer of
	// today sends: error_code stays within the set whatever the log holds.
	CodeUnknown = "Unknown"
)

// ErrorCodes lists the codes with what each means, in the order of the
// table in docs/design.md §5.3.
var ErrorCodes = []struct{ Code, Ends, Meaning string }{
	{CodeTimeout, "failed", "The job's deadline (vm.job.timeout) passed, or an agent command or placement went unanswered until its own; detail names what it waited for and where the VM rests."},
	{CodePlacementFailed, "failed", "Placement found no host (or pool) for the job, or offered one the job cannot use."},
	{CodeAgentError, "failed", "The agent answered the job's command with an error; detail quotes the command, host and error."},
	{CodeUnexpectedPowerState, "failed", "A power report contradicted what the job waited for (a guest that stopped while starting)."},
	{CodeUnexpectedHost, "failed", "The VM turned up on a host the migration neither left nor chose."},
	{CodeHostDown, "failed", "The host the job waited on went down."},
	{CodeErrorInMaintenance, "failed", "A host's maintenance ended with VMs it could not migrate (PrepareForMaintenance jobs)."},
	{CodeInternal, "failed", "vmplane could not carry out a command it had accepted (a queued command that no longer decodes)."},
	{CodeCancelled, "cancelled, failed", "A terminate or a caller's cancel ended the job (every cancelled job); by says who."},
	{CodeInvalid, "rejected", "The command's parameters are wrong whatever the VM's state (a size out of range, an empty name)."},
	{CodeNotFound, "rejected", "The VM, snapshot or volume the command names does not exist."},
	{CodeAlreadyExists, "rejected", "What the command would create exists (a VM id, a snapshot name)."},
	{CodeInvalidState, "rejected", "The command is not allowed in the VM's (or host's) state; allowed_actions lists what is."},
	{CodeUnknown, "failed, rejected", "A reason outside this set: none is written today; reason keeps the word as it was."},
}

// IsErrorCode says whether reason is one of ErrorCodes.
func IsErrorCode(reason string) bool {
	for _, c := range ErrorCodes {
		if c.Code == reason {
			return true
		}
	}
	return false
}

// ErrorCode is the error code of a job's end event: a JobFailed's or
// JobRejected's reason when it is in the set (CodeUnknown otherwise),
// CodeCancelled for a JobCancelled, and empty for anything else.
func ErrorCode(ev any) string {
	switch e := ev.(type) {
	case *JobFailed:
		return codeOf(e.Reason)
	case *JobRejected:
		return codeOf(e.Reason)
	case *JobCancelled:
		return CodeCancelled
	}
	return ""
}

func codeOf(reason string) string {
	if IsErrorCode(reason) {
		return reason
	}
	return CodeUnknown
}
