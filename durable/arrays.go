package durable

import (
	"encoding/json"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgtype"
)

// Array parameters of the statements that write many rows at once through
// unnest. pgx encodes []string, []int32, []int64, []bool, []time.Time and
// [][16]byte by a direct plan; a slice of pointers or of a named type goes
// through reflection, element by element, which was 7 % of rbd's CPU in
// the chain run. So a nullable column is sent as a FlatArray of pgtype
// values (NULL where not Valid) and ids as [16]byte.

// nullableText is s, NULL when empty.
func nullableText[T ~string](s T) pgtype.Text {
	return pgtype.Text{String: string(s), Valid: s != ""}
}

// nullableJSON is a JSON document as text, NULL when empty.
func nullableJSON(b json.RawMessage) pgtype.Text {
	return pgtype.Text{String: string(b), Valid: len(b) > 0}
}

// nullableTime is *t, NULL when nil.
func nullableTime(t *time.Time) pgtype.Timestamptz {
	if t == nil {
		return pgtype.Timestamptz{}
	}
	return pgtype.Timestamptz{Time: *t, Valid: true}
}

// nullableUUID is *id, NULL when nil.
func nullableUUID(id *uuid.UUID) pgtype.UUID {
	if id == nil {
		return pgtype.UUID{}
	}
	return pgtype.UUID{Bytes: *id, Valid: true}
}

// nullableInt is v, NULL when zero (not reported).
func nullableInt(v int64) pgtype.Int8 { return pgtype.Int8{Int64: v, Valid: v != 0} }

// nullableFloat is v, NULL when zero (not reported).
func nullableFloat(v float64) pgtype.Float8 { return pgtype.Float8{Float64: v, Valid: v != 0} }

// textOrNull is *s, NULL when nil: a field that is left as it is when not
// given (the SQL coalesces), where the empty string is a value.
func textOrNull[T ~string](s *T) pgtype.Text {
	if s == nil {
		return pgtype.Text{}
	}
	return pgtype.Text{String: string(*s), Valid: true}
}

// uuidArray is ids as pgx encodes them without reflection.
func uuidArray(ids []uuid.UUID) [][16]byte {
	out := make([][16]byte, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
