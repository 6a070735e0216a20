package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
)

// WriteJSON writes s as one indented JSON object: the counts and every
// result (code, name, doc, status, reason, duration_ns).
func WriteJSON(w io.Writer, s *Summary) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
}

// WriteJUnit writes s as a JUnit XML test suite: FAIL is a failure, OMIT
// is skipped, WARN passes with its reason in system-out.
func WriteJUnit(w io.Writer, s *Summary) error {
	js := junitSuite{Name: "gonfsrdma-conformance", Tests: len(s.Results), Failures: s.Failed, Skipped: s.Omitted}
	var total float64
	for _, r := range s.Results {
		sec := r.Duration.Seconds()
		total += sec
		c := junitCase{Name: r.Code + " " + r.Name, Classname: "conformance", Time: fmt.Sprintf("%.3f", sec)}
		switch r.Status {
		case Fail:
			c.Failure = &junitMessage{Message: r.Reason}
		case Omit:
			c.Skipped = &junitMessage{Message: r.Reason}
		case Warn:
			c.SystemOut = "WARN: " + r.Reason
		}
		js.Cases = append(js.Cases, c)
	}
	js.Time = fmt.Sprintf("%.3f", total)
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(&js); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
