package handler

import "strings"

// ParamProblem is one thing wrong with a verb's handler params: the param
// at fault (empty when it is the params as a whole), whether its key is
// what is wrong (an unknown param) rather than its value, and why.
type ParamProblem struct {
	Param   string
	Key     bool
	Message string
}

// ParamProblems is the error a HandlerSpec.CheckParams returns to name
// each problem apart, so that the catalogue reports each one at the
// param's own key or value (V004) rather than one message at params. Any
// other error is reported at params, as one.
type ParamProblems []ParamProblem

// Error lists the problems on one line.
func (ps ParamProblems) Error() string {
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Message
	}
	return strings.Join(msgs, "; ")
}
