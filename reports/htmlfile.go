package reports

import "io"

// WriteHTMLFile writes the HTML report for r to path atomically (a temp
// file renamed into place), so an interrupted write never leaves half a page.
func WriteHTMLFile(path string, r *Results) error {
	return writeFileAtomic(path, func(w io.Writer) error { return WriteHTML(w, r) })
}
