package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/runbookdev/runbook/client"
	"github.com/runbookdev/runbook/rbtype"
)

// originEvents is how many of a runbook's first events rbd status reads
// to find the schedule that made it: SCHEDULE_FIRED is written in the
// transaction that creates the runbook, among its first few.
const originEvents = 20

// scheduledBy says which schedule made a runbook and for which tick,
// from its SCHEDULE_FIRED event, or "" for a runbook no schedule made (or
// when the ledger cannot be read: rbd status shows the rest anyway).
func scheduledBy(ctx context.Context, cl *client.Client, id string) string {
	page, err := cl.EventsPage(ctx, id, 0, originEvents)
	if err != nil {
		return ""
	}
	for _, ev := range page.Events {
		if ev.Type != rbtype.EventScheduleFired {
			continue
		}
		var d struct {
			ScheduleID string    `json:"schedule_id"`
			Name       string    `json:"name"`
			Tick       time.Time `json:"tick"`
		}
		if json.Unmarshal(ev.Data, &d) != nil {
			return ""
		}
		return fmt.Sprintf("schedule %s (%s), its tick of %s", d.Name, d.ScheduleID, stamp(d.Tick))
	}
	return ""
}
