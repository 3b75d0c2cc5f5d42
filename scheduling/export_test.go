package scheduling

// What the external tests drive of the lookout (lookout.go) without a
// served loop.
var (
	ShareLoopWork = (*Service).shareLoopWork
	ReadLoopWork  = (*Service).readLoopWork
)
