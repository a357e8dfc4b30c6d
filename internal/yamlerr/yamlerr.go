// Package yamlerr places a syntax error of gopkg.in/yaml.v3 in the text it
// was read from: the line and column to show, and the message without the
// parser's "yaml: line N:" prefix. Policy errors (core) and scenario errors
// (scenarios) share it, so both point at the same place.
//
// yaml.v3 reports a tab that breaks indentation on the line before it (the
// line of the mapping it interrupts) and never gives a column. Place finds
// the character itself: the tab, or the character no token starts with;
// for any other error, the column of the reported line's first character.
package yamlerr

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
)

var lineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Place returns where err, a syntax error yaml.v3 returned for data, is:
// its line and column (1-based; 0 when not known) and its message. An
// error that names no line keeps its text, less the "yaml: " prefix.
func Place(data []byte, err error) (line, col int, msg string) {
	m := lineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, 0, strings.TrimPrefix(err.Error(), "yaml: ")
	}
	line, _ = strconv.Atoi(m[1])
	msg = m[2]
	lines := bytes.Split(data, []byte("\n"))
	text := func(n int) []byte {
		if n < 1 || n > len(lines) {
			return nil
		}
		return bytes.TrimSuffix(lines[n-1], []byte("\r"))
	}
	switch {
	case strings.Contains(msg, "tab character"):
		// The tab is on the reported line or the one after it.
		for n := line; n <= line+1; n++ {
			if i := bytes.IndexByte(leading(text(n)), '\t'); i >= 0 {
				return n, i + 1, msg
			}
		}
	case strings.Contains(msg, "cannot start any token"):
		for n := line; n <= line+1; n++ {
			t := text(n)
			if i := bytes.IndexByte(leading(t), '\t'); i >= 0 {
				return n, i + 1, msg
			}
			if i := bytes.IndexAny(t[len(leading(t)):], "\t@`"); i >= 0 {
				return n, len(leading(t)) + i + 1, msg
			}
		}
	}
	if t := text(line); len(t) > len(leading(t)) {
		return line, len(leading(t)) + 1, msg
	}
	return line, 0, msg
}

// leading returns the spaces and tabs a line starts with.
func leading(t []byte) []byte {
	return t[:len(t)-len(bytes.TrimLeft(t, " \t"))]
}
