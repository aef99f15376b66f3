package reports

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// HTMLFile is the HTML report's name inside the run directory, beside
// report.md.
const HTMLFile = "report.html"

// The HTML report is report.md rendered by a converter of the markdown this
// package writes (headings, paragraphs, lists, tables, images, links,
// bold and code), not a general one: the report's markdown is generated,
// so the subset is known and tested. It is one self-contained file: each
// plot is its SVG inlined (with its hover details), the style and the
// script are inline, and nothing is fetched, so it opens the same from a
// CI artifact, a mail, or a machine with no network. Tables sort by a
// click on a column's header; a table of contents of every section and
// subsection sits at the top.

// writeHTML renders markdown (the report of dir) as dir/report.html.
func writeHTML(dir, title string, markdown []byte) error {
	body, toc, err := mdToHTML(dir, string(markdown))
	if err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	b.WriteString("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	fmt.Fprintf(&b, "<title>%s</title>\n<style>%s</style>\n</head>\n<body>\n", html.EscapeString(title), htmlStyle)
	b.WriteString("<nav id=\"toc\"><strong>Contents</strong>\n" + toc + "</nav>\n<main>\n")
	b.WriteString(body)
	b.WriteString("</main>\n<script>" + htmlScript + "</script>\n</body>\n</html>\n")
	return writeFileAtomic(filepath.Join(dir, HTMLFile), []byte(b.String()))
}

var (
	mdImage  = regexp.MustCompile(`^!\[([^\]]*)\]\(([^)]+)\)$`)
	mdLink   = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)
	mdBold   = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	mdCode   = regexp.MustCompile("`([^`]+)`")
	svgStart = regexp.MustCompile(`(?s)^.*?(<svg\b)`)
)

// mdToHTML converts the report's markdown to an HTML body and a table of
// contents of its level-2 and level-3 headings.
func mdToHTML(dir, text string) (body, toc string, err error) {
	var b, t strings.Builder
	ids := map[string]int{}
	lines := strings.Split(text, "\n")
	var para []string
	flush := func() {
		if len(para) > 0 {
			b.WriteString("<p>" + inline(strings.Join(para, " ")) + "</p>\n")
			para = nil
		}
	}
	tocLevel := 1
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			flush()
		case strings.HasPrefix(line, "#"):
			flush()
			level := len(line) - len(strings.TrimLeft(line, "#"))
			title := strings.TrimSpace(line[level:])
			id := anchor(title)
			// GitHub's rule for repeated headings: -1, -2, … after the
			// first, so that the markdown's links work here too.
			if n := ids[id]; n > 0 {
				ids[id]++
				id = fmt.Sprintf("%s-%d", id, n)
			} else {
				ids[id] = 1
			}
			fmt.Fprintf(&b, "<h%d id=\"%s\">%s</h%d>\n", level, id, inline(title), level)
			if level == 2 || level == 3 {
				for tocLevel < level {
					t.WriteString("<ul>\n")
					tocLevel++
				}
				for tocLevel > level {
					t.WriteString("</ul>\n")
					tocLevel--
				}
				fmt.Fprintf(&t, "<li><a href=\"#%s\">%s</a></li>\n", id, inline(title))
			}
		case strings.HasPrefix(line, "- "):
			flush()
			b.WriteString("<ul>\n")
			for ; i < len(lines) && strings.HasPrefix(lines[i], "- "); i++ {
				b.WriteString("<li>" + inline(lines[i][2:]) + "</li>\n")
			}
			i--
			b.WriteString("</ul>\n")
		case strings.HasPrefix(line, "|"):
			flush()
			var rows []string
			for ; i < len(lines) && strings.HasPrefix(lines[i], "|"); i++ {
				rows = append(rows, lines[i])
			}
			i--
			b.WriteString(tableHTML(rows))
		case mdImage.MatchString(line):
			flush()
			m := mdImage.FindStringSubmatch(line)
			fig, err := figureHTML(dir, m[1], m[2])
			if err != nil {
				return "", "", err
			}
			b.WriteString(fig)
		default:
			para = append(para, line)
		}
	}
	flush()
	for ; tocLevel > 1; tocLevel-- {
		t.WriteString("</ul>\n")
	}
	return b.String(), t.String(), nil
}

// figureHTML inlines the SVG beside a plot's PNG, with the PNG's alt text
// as its label, or, without an SVG (an older run's plots), says so.
func figureHTML(dir, alt, rel string) (string, error) {
	svg, err := os.ReadFile(svgName(dir, rel))
	if err != nil {
		if os.IsNotExist(err) {
			return fmt.Sprintf("<p class=\"missing\">(plot %s has no SVG)</p>\n", html.EscapeString(rel)), nil
		}
		return "", err
	}
	s := svgStart.ReplaceAllString(string(svg), "$1") // drop the XML prolog and comment
	s = strings.Replace(s, "<svg ", fmt.Sprintf("<svg role=\"img\" aria-label=\"%s\" ", html.EscapeString(alt)), 1)
	return fmt.Sprintf("<figure>%s<figcaption>%s · <a href=\"%s\">SVG</a> · <a href=\"%s\">PNG</a></figcaption></figure>\n",
		s, html.EscapeString(alt), html.EscapeString(strings.TrimSuffix(rel, ".png")+".svg"), html.EscapeString(rel)), nil
}

// tableHTML renders a markdown table's lines (header, alignment, rows) as
// a sortable table.
func tableHTML(rows []string) string {
	if len(rows) < 2 {
		return ""
	}
	split := func(row string) []string {
		row = strings.TrimSpace(row)
		row = strings.TrimPrefix(row, "|")
		row = strings.TrimSuffix(row, "|")
		var cells []string
		var cur strings.Builder
		for i := 0; i < len(row); i++ {
			switch {
			case row[i] == '\\' && i+1 < len(row) && row[i+1] == '|':
				cur.WriteByte('|')
				i++
			case row[i] == '|':
				cells = append(cells, strings.TrimSpace(cur.String()))
				cur.Reset()
			default:
				cur.WriteByte(row[i])
			}
		}
		return append(cells, strings.TrimSpace(cur.String()))
	}
	aligns := split(rows[1])
	var b strings.Builder
	b.WriteString("<table class=\"sortable\">\n<thead><tr>")
	for _, h := range split(rows[0]) {
		b.WriteString("<th title=\"click to sort\">" + inline(h) + "</th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	for _, r := range rows[2:] {
		b.WriteString("<tr>")
		for k, c := range split(r) {
			cls := ""
			if k < len(aligns) && strings.HasSuffix(aligns[k], ":") && !strings.HasPrefix(aligns[k], ":") {
				cls = " class=\"num\""
			}
			b.WriteString("<td" + cls + ">" + inline(c) + "</td>")
		}
		b.WriteString("</tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n")
	return b.String()
}

// inline renders a line's inline markdown: code, bold and links, the rest
// escaped.
func inline(s string) string {
	// Code spans first, kept from the other rules by placeholders.
	var codes []string
	s = mdCode.ReplaceAllStringFunc(s, func(m string) string {
		codes = append(codes, "<code>"+html.EscapeString(m[1:len(m)-1])+"</code>")
		return fmt.Sprintf("\x00%d\x00", len(codes)-1)
	})
	s = html.EscapeString(s)
	s = mdBold.ReplaceAllString(s, "<strong>$1</strong>")
	s = mdLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := mdLink.FindStringSubmatch(m)
		return fmt.Sprintf("<a href=\"%s\">%s</a>", sub[2], sub[1])
	})
	for i, c := range codes {
		s = strings.Replace(s, fmt.Sprintf("\x00%d\x00", i), c, 1)
	}
	return s
}

const htmlStyle = `
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;color:#1b1f24;margin:0;display:flex}
nav#toc{position:sticky;top:0;align-self:flex-start;max-height:100vh;overflow:auto;width:16rem;flex:none;padding:1rem;border-right:1px solid #d0d7de;font-size:13px;box-sizing:border-box}
nav#toc ul{padding-left:1rem;margin:.2rem 0}
main{padding:1rem 2rem;max-width:78rem;min-width:0;flex:1}
h1{font-size:1.6rem}h2{border-bottom:1px solid #d0d7de;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:13px;display:block;overflow-x:auto}
th,td{border:1px solid #d0d7de;padding:.2rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa;cursor:pointer;user-select:none;white-space:nowrap}
th.asc::after{content:" ▲"}th.desc::after{content:" ▼"}
td.num{text-align:right;font-variant-numeric:tabular-nums}
tbody tr:nth-child(even){background:#fafbfc}
code{background:#f6f8fa;padding:0 .2rem;border-radius:3px;font-size:90%}
figure{margin:1rem 0}figure svg{max-width:100%;height:auto;display:block}
figcaption{font-size:12px;color:#57606a}
.tips circle:hover{fill-opacity:.25;stroke:#000;stroke-width:1}
@media (max-width:60rem){body{display:block}nav#toc{position:static;width:auto;max-height:none;border:0}}
`

// htmlScript sorts a table by the clicked column: numerically where both
// cells start with a number (sizes in binary units read as bytes), else
// as text; a second click reverses. Opened with "?selftest" (as the
// browser test does), it also checks the page from the inside: every
// in-page link has its target, and every table sorts by its first column;
// it writes what it found to the body's data-selftest attribute, and any
// script error to data-error.
const htmlScript = `
(function(){
  var body=document.body;
  window.addEventListener('error',function(e){body.setAttribute('data-error',String(e.message));});
  var units={B:1,KiB:1024,MiB:1048576,GiB:1073741824};
  function key(t){
    t=t.replace(/,/g,'').trim();
    var m=t.match(/^([+\u2212-]?\d+(?:\.\d+)?)\s*(B|KiB|MiB|GiB)?/);
    if(!m)return null;
    var v=parseFloat(m[1].replace('\u2212','-'));
    return m[2]?v*units[m[2]]:v;
  }
  function cmp(x,y){
    var kx=key(x),ky=key(y);
    if(kx!==null&&ky!==null)return kx-ky;
    if(kx!==null)return -1;
    if(ky!==null)return 1;
    return x.localeCompare(y);
  }
  function text(row,col){return row.cells[col]?row.cells[col].textContent:'';}
  document.querySelectorAll('table.sortable').forEach(function(tb){
    var ths=tb.querySelectorAll('th');
    ths.forEach(function(th,col){
      th.addEventListener('click',function(){
        var asc=!th.classList.contains('asc');
        ths.forEach(function(o){o.classList.remove('asc','desc');});
        th.classList.add(asc?'asc':'desc');
        var tbody=tb.tBodies[0],rows=Array.prototype.slice.call(tbody.rows);
        rows.sort(function(a,b){var d=cmp(text(a,col),text(b,col));return asc?d:-d;});
        rows.forEach(function(r){tbody.appendChild(r);});
      });
    });
  });
  if(location.search.indexOf('selftest')>=0){
    var bad=[],sorted=0;
    document.querySelectorAll('a[href^="#"]').forEach(function(a){
      var id=decodeURIComponent(a.getAttribute('href').slice(1));
      if(!document.getElementById(id))bad.push('no target for '+a.getAttribute('href'));
    });
    document.querySelectorAll('table.sortable').forEach(function(tb,i){
      var th=tb.querySelector('th'),rows=tb.tBodies[0].rows;
      if(!th||rows.length<2)return;
      th.click();th.click(); // descending
      for(var k=1;k<rows.length;k++){
        if(cmp(text(rows[k-1],0),text(rows[k],0))<0){bad.push('table '+i+' not sorted');return;}
      }
      sorted++;
    });
    body.setAttribute('data-selftest',bad.length?bad.join('; '):'ok: '+sorted+' tables sorted');
  }
  body.setAttribute('data-ready','1');
})();
`
