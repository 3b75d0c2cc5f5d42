package scheduling

// Error codes: the "code" of every API error body, and of the typed errors
// (ValidationError, ConflictError, NotFoundError) that carry them. The list
// is the contract's (docs/CONTRACT.md, "Error codes"); no surface spells a
// code itself.
const (
	// 422: input that cannot be accepted; field-level messages in "fields".
	CodeValidationFailed     = "validation_failed" // the general one, which the others refine
	CodeSpecNeverFires       = "spec_never_fires"  // a spec with no future occurrence
	CodeInvalidTimeRange     = "invalid_time_range"
	CodeBackfillTooLarge     = "backfill_too_large"
	CodeInvalidLimit         = "invalid_limit"
	CodeInvalidAfterSequence = "invalid_after_sequence"
	CodeInvalidCursor        = "invalid_cursor" // a ledger cursor no previous page gave

	// 404.
	CodeNotFound         = "not_found" // a namespace the caller cannot see, or no route
	CodeScheduleNotFound = "schedule_not_found"
	CodeRunNotFound      = "run_not_found"
	CodeNotifierNotFound = "notifier_not_found"
	CodeDeliveryNotFound = "delivery_not_found"
	CodeVersionNotFound  = "version_not_found" // a version number the schedule does not have
	CodeBackfillNotFound = "backfill_not_found"
	CodeCalendarNotFound = "calendar_not_found"

	// 409: the state forbids the change.
	CodeScheduleAlreadyExists  = "schedule_already_exists" // also when the old one is deleted
	CodeScheduleDeleted        = "schedule_deleted"
	CodeScheduleNotActive      = "schedule_not_active"
	CodeScheduleNotPaused      = "schedule_not_paused"
	CodeRunNotRunning          = "run_not_running"
	CodeRunHeldByAnotherWorker = "run_held_by_another_worker"
	CodeRunNotRetryable        = "run_not_retryable"   // retry of a run that did not fail or time out
	CodeRunNoSchedule          = "run_has_no_schedule" // run again of a run its schedule no longer backs
	CodeCancelAlreadyRequested = "cancel_already_requested"
	CodeNotifierAlreadyExists  = "notifier_already_exists"
	CodeDeliveryNotDead        = "delivery_not_dead" // redelivery of a delivery that is not dead
	CodeTooManyNotifiers       = "too_many_notifiers"
	CodeNoChange               = "no_change"            // a revert to what the schedule already is
	CodeBackfillNotRunning     = "backfill_not_running" // pause of a job that is not running
	CodeBackfillNotPaused      = "backfill_not_paused"  // resume of a job that is not paused
	CodeBackfillFinished       = "backfill_finished"    // cancel of a job already ended
	CodeBackfillOverlaps       = "backfill_overlaps"    // an unfinished job of the schedule covers part of the range
	CodeTooManyBackfills       = "too_many_backfills"   // the namespace's bound on unfinished jobs
	CodeCalendarAlreadyExists  = "calendar_already_exists"
	CodeCalendarInUse          = "calendar_in_use" // delete of a calendar live schedules list; the body names them
	CodeTooManyCalendars       = "too_many_calendars"

	// Transport: the request could not be read or was refused before any
	// use case ran.
	CodeInvalidJSON      = "invalid_json" // 400
	CodeBadRequest       = "bad_request"  // 400
	CodeInvalidForm      = "invalid_form" // 400, a console form
	CodeUnauthorized     = "unauthorized" // 401
	CodeForbidden        = "forbidden"    // 403
	CodeMethodNotAllowed = "method_not_allowed"
	CodeRequestTooLarge  = "request_too_large" // 413
	CodeTooManyRequests  = "too_many_requests" // 429
	CodeServerBusy       = "server_busy"       // 503: retry later
	// CodeDatabaseUnavailable (503, with Retry-After): the database could
	// not be reached or dropped the connection mid-request (a restart, a
	// failover); nothing the request wrote was committed unless the commit
	// itself was cut, so a retry of an idempotent request is safe.
	CodeDatabaseUnavailable = "database_unavailable"
	CodeInternalError       = "internal_error" // 500; details only in the log
)
