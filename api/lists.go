package api

// List is one page of a list: Next is the cursor of the following page,
// empty on the last.
type List[T any] struct {
	Items []T    `json:"items"`
	Next  string `json:"next,omitempty"`
}
