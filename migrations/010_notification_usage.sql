-- docs/design/semantics.md section 3: a notification may carry a usage object (what
-- the external work used: tokens, a model, cost, credits). It is kept with
-- the notification and added to the ledger row of the attempt whose wait
-- the notification ends, when that attempt is resumed.
ALTER TABLE completion_notifications ADD COLUMN usage jsonb;
