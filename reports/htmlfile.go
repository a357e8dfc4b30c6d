package reports

import "io"

// WriteHTMLFile writes the HTML report for r to path atomically (a temp
// file renamed into place), so an interrupted write never leaves half a page:
// what `sluice report RESULTS.json -o report.html` needs. Invalid results
// are rejected before anything is written.
func WriteHTMLFile(path string, r *Results) error {
	if err := r.Validate(); err != nil {
		return err
	}
	return writeFileAtomic(path, func(w io.Writer) error { return writeHTML(w, r) })
}
