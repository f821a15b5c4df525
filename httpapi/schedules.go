package httpapi

import (
	"net/http"

	"github.com/google/uuid"

	"github.com/runbookdev/runbook/apitype"
	"github.com/runbookdev/runbook/runtime"
)

// createSchedule is POST /v1/schedules: 201 with the schedule; 400 naming
// the field for a cron expression that does not parse, an unknown time
// zone, an overlap or catch_up outside its list, or inputs that do not
// fit; 422 with the compiler's diagnostics for a source that does not
// compile; 409 for a name the tenant uses.
func (s *Server) createSchedule(w http.ResponseWriter, r *http.Request) error {
	body, err := readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	var req apitype.ScheduleRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	v, err := s.engine.CreateSchedule(r.Context(), runtime.ScheduleSpec{
		Name: req.Name, Cron: req.Cron, Timezone: req.Timezone, Source: req.Source, Plan: req.Plan, Filename: req.Filename,
		Inputs: req.Inputs, Mode: req.Mode, Overlap: req.Overlap, CatchUp: req.CatchUp,
	})
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/v1/schedules/"+v.ID.String())
	writeJSON(w, http.StatusCreated, v)
	return nil
}

// listSchedules is GET /v1/schedules: the caller's tenant's (an admin's:
// ?tenant=, or every tenant's).
func (s *Server) listSchedules(w http.ResponseWriter, r *http.Request) error {
	list, err := s.engine.Schedules(r.Context(), r.URL.Query().Get("tenant"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.ScheduleList{Schedules: list})
	return nil
}

// scheduleID reads the {id} of the path.
func scheduleID(r *http.Request) (uuid.UUID, error) {
	raw := r.PathValue("id")
	id, err := uuid.Parse(raw)
	if err != nil {
		return uuid.Nil, errorf(http.StatusBadRequest, CodeInvalidRequest, "%q is not a schedule id (a UUID)", raw)
	}
	return id, nil
}

// getSchedule is GET /v1/schedules/{id}.
func (s *Server) getSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := scheduleID(r)
	if err != nil {
		return err
	}
	v, err := s.engine.Schedule(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// patchSchedule is PATCH /v1/schedules/{id}: pause, resume or change.
func (s *Server) patchSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := scheduleID(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, s.cfg.MaxBody)
	if err != nil {
		return err
	}
	var req apitype.SchedulePatchRequest
	if err := decodeJSON(body, &req, false); err != nil {
		return err
	}
	v, err := s.engine.UpdateSchedule(r.Context(), id, runtime.SchedulePatch{
		Paused: req.Paused, Name: req.Name, Cron: req.Cron, Timezone: req.Timezone, Source: req.Source, Plan: req.Plan,
		Filename: req.Filename, Inputs: req.Inputs, Mode: req.Mode, Overlap: req.Overlap, CatchUp: req.CatchUp,
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, v)
	return nil
}

// deleteSchedule is DELETE /v1/schedules/{id}; the runbooks it made stay.
func (s *Server) deleteSchedule(w http.ResponseWriter, r *http.Request) error {
	id, err := scheduleID(r)
	if err != nil {
		return err
	}
	if err := s.engine.DeleteSchedule(r.Context(), id); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, apitype.ScheduleDeleted{ID: id, Deleted: true})
	return nil
}
