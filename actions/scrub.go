package actions

// ScrubError returns err with scrub applied to its message (removing secrets a server or a
// command echoed back), keeping err in the chain so that errors.Is, errors.As and IsTerminal
// still see through it. It returns err itself when scrub changes nothing.
func ScrubError(err error, scrub func(string) string) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if clean := scrub(msg); clean != msg {
		return &scrubbedError{msg: clean, err: err}
	}
	return err
}

type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }
