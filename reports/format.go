package reports

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// num formats v with three significant digits and no exponent, the precision
// benchmark numbers deserve ("12.3", "0.0456", "1234").
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	if v == 0 {
		return "0"
	}
	d := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	d = min(max(d, 0), 9)
	return strconv.FormatFloat(v, 'f', d, 64)
}

// pct formats a fraction as a signed percentage: 0.123 → "+12.3%".
func pct(frac float64) string {
	if math.IsNaN(frac) || math.IsInf(frac, 0) {
		return "—"
	}
	return fmt.Sprintf("%+.1f%%", 100*frac)
}

// cell escapes text for a markdown table cell: a '|' would end the cell and a
// newline the row.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.Join(strings.Fields(s), " ")
}

// md accumulates a markdown document. With dir set, every table is also
// written as dir/tables/NAME.csv, named after the headings above it, and
// linked under the table: the numbers in a form a spreadsheet or a script
// reads without parsing markdown.
type md struct {
	bytes.Buffer
	dir      string
	headings [7]string      // the current heading at each level
	csvNames map[string]int // names given, to number repeats
}

func (m *md) p(format string, args ...any) {
	fmt.Fprintf(m, format, args...)
	m.WriteString("\n\n")
}

// text writes a paragraph as it is, with no formatting verbs.
func (m *md) text(s string) {
	m.WriteString(s)
	m.WriteString("\n\n")
}

func (m *md) h(level int, title string) {
	m.WriteString(strings.Repeat("#", level) + " " + title + "\n\n")
	if level < len(m.headings) {
		m.headings[level] = title
		for i := level + 1; i < len(m.headings); i++ {
			m.headings[i] = ""
		}
	}
}

func (m *md) img(alt, rel string) { m.p("![%s](%s)", alt, rel) }

// table is a markdown table; columns after the first are right-aligned
// unless left is set, because they are numbers.
type table struct {
	header []string
	rows   [][]string
	left   map[int]bool
}

func (t *table) add(row ...string) { t.rows = append(t.rows, row) }

func (t *table) write(w io.Writer) error {
	aligns := make([]tw.Align, len(t.header))
	for i := range aligns {
		aligns[i] = tw.AlignRight
		if i == 0 || t.left[i] {
			aligns[i] = tw.AlignLeft
		}
	}
	tb := tablewriter.NewTable(w,
		tablewriter.WithRenderer(renderer.NewMarkdown()),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
	)
	hdr := make([]any, len(t.header))
	for i, h := range t.header {
		hdr[i] = cell(h)
	}
	tb.Header(hdr...)
	for _, r := range t.rows {
		row := make([]any, len(t.header))
		for i := range row {
			row[i] = ""
			if i < len(r) {
				row[i] = cell(r[i])
			}
		}
		if err := tb.Append(row...); err != nil {
			return err
		}
	}
	return tb.Render()
}

func (m *md) table(t *table) error {
	if err := t.write(m); err != nil {
		return err
	}
	m.WriteString("\n")
	if m.dir == "" {
		return nil
	}
	rel, err := m.writeCSV(t)
	if err != nil {
		return err
	}
	m.p("[CSV](%s)", rel)
	return nil
}

var dashes = regexp.MustCompile(`-{2,}`)

// writeCSV writes t as dir/tables/NAME.csv and returns its path relative
// to dir. NAME is the headings above t (below the document's title), with
// a number after a name given before.
func (m *md) writeCSV(t *table) (string, error) {
	var parts []string
	for _, h := range m.headings[2:] {
		if h != "" {
			parts = append(parts, h)
		}
	}
	name := strings.Trim(dashes.ReplaceAllString(slug(parts...), "-"), "-")
	name = strings.ReplaceAll(strings.ReplaceAll(name, "-_", "_"), "_-", "_")
	if name == "" {
		name = "table"
	}
	if m.csvNames == nil {
		m.csvNames = map[string]int{}
	}
	m.csvNames[name]++
	if n := m.csvNames[name]; n > 1 {
		name += fmt.Sprintf("_%d", n)
	}
	rel := "tables/" + name + ".csv"
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	if err := w.Write(t.header); err != nil {
		return "", err
	}
	for _, r := range t.rows {
		row := make([]string, len(t.header))
		copy(row, r)
		if err := w.Write(row); err != nil {
			return "", err
		}
	}
	w.Flush()
	if err := os.MkdirAll(filepath.Join(m.dir, "tables"), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(m.dir, filepath.FromSlash(rel)), buf.Bytes(), 0o644); err != nil {
		return "", err
	}
	return rel, nil
}
