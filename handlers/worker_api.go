package handlers

import (
	"net/http"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/tidelinehq/tideline/apijson"
	"github.com/tidelinehq/tideline/scheduling"
)

// WorkerAPI serves the worker protocol (docs/CONTRACT.md §7) over HTTP:
// workers in any language poll for runs, heartbeat, and report results.
// The run queue behind it is scheduling/runqueue.go; the Go worker that
// speaks it is the worker package.
type WorkerAPI struct {
	Service   RunQueue
	Namespace string
}

// Poll answers POST /worker/poll: claims pending runs, long-polling up to
// wait_seconds when there are none.
func (h *WorkerAPI) Poll(c echo.Context) error {
	var req apijson.WorkerPoll
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	ns, err := h.namespace(c, req.Namespace)
	if err != nil {
		return err
	}
	runs, err := h.Service.Poll(c.Request().Context(), scheduling.PollRequest{
		Namespace: ns, Connection: req.Connection, Queue: req.Queue, WorkerID: req.WorkerID, Principal: principalName(c),
		Limit: req.Limit, LeaseSeconds: req.LeaseSeconds, Wait: time.Duration(req.WaitSeconds) * time.Second,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromClaimed(runs))
}

// namespace takes the body's namespace, else the request's. On a server
// fixed to one namespace, any other is answered like one that does not exist.
func (h *WorkerAPI) namespace(c echo.Context, fromBody string) (string, error) {
	if fromBody == "" {
		return apiNamespace(c, h.Namespace)
	}
	return resolveNamespace(c, h.Namespace, nsQuery{named: fromBody, strict: true})
}

// Heartbeat answers POST /worker/runs/{run_id}/heartbeat {namespace?, lease_seconds?}.
func (h *WorkerAPI) Heartbeat(c echo.Context) error {
	var req apijson.WorkerHeartbeat
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	ns, err := h.namespace(c, req.Namespace)
	if err != nil {
		return err
	}
	run, err := h.Service.Heartbeat(c.Request().Context(), ns, c.Param("run_id"), holder(c, req.WorkerID), req.LeaseSeconds)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromHeartbeat(run))
}

// Complete answers POST /worker/runs/{run_id}/complete {namespace?, output}.
func (h *WorkerAPI) Complete(c echo.Context) error {
	var req apijson.WorkerComplete
	if err := decodeJSON(c, &req, true); err != nil {
		return err
	}
	ns, err := h.namespace(c, req.Namespace)
	if err != nil {
		return err
	}
	run, err := h.Service.CompleteRun(c.Request().Context(), ns, c.Param("run_id"), holder(c, req.WorkerID), req.Output)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromRun(run))
}

// Fail answers POST /worker/runs/{run_id}/fail {namespace?, worker_id,
// message, type, non_retryable?}.
func (h *WorkerAPI) Fail(c echo.Context) error {
	var req apijson.WorkerFail
	if err := decodeJSON(c, &req, false); err != nil {
		return err
	}
	ns, err := h.namespace(c, req.Namespace)
	if err != nil {
		return err
	}
	run, err := h.Service.FailRun(c.Request().Context(), ns, c.Param("run_id"), holder(c, req.WorkerID),
		scheduling.Failure{Message: req.Message, Type: req.Type, NonRetryable: req.NonRetryable})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, apijson.FromRun(run))
}

// holder is the lease holder a worker request speaks for: its token's
// principal and the worker_id in its body.
func holder(c echo.Context, workerID string) scheduling.LeaseHolder {
	return scheduling.LeaseHolder{Principal: principalName(c), WorkerID: workerID}
}

func principalName(c echo.Context) string {
	if p := PrincipalFrom(c); p != nil {
		return p.Name
	}
	return ""
}
