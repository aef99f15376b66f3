package reports

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestHTMLReport checks that every plot is also an SVG and every table
// also a CSV, then opens report.html in a real browser, headless
// chromium, as a reader would: it must load with no script error, its
// in-page self-check (every table of contents link has its target, every
// table sorts) must pass, every plot must be an inline SVG, and a
// screenshot of the page must show something: not blank, and the plots'
// colours on it. Without chromium (Debian: apt-get install chromium) it
// skips and says so. The screenshot is kept under $DISTBENCH_SCREENSHOT
// when set, to look at.
func TestHTMLReport(t *testing.T) {
	dir := copyRun(t, filepath.Join("testdata", "headline_training"))
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(filepath.Join(dir, HTMLFile))
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	checkVectorAndData(t, dir, md)
	checkSelfContained(t, html)
	plots := len(imgLink.FindAllSubmatch(md, -1))
	if n := bytes.Count(html, []byte("<svg ")); n != plots {
		t.Errorf("report.html inlines %d SVGs, report.md links %d plots", n, plots)
	}

	browser := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			browser = p
			break
		}
	}
	if browser == "" {
		t.Skip("no chromium here (Debian: apt-get install chromium): report.html not opened in a browser")
	}
	// Chromium starts slowly on a loaded machine; the deadline is for a
	// hung browser, not a slow one.
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	page := "file://" + filepath.Join(dir, HTMLFile)
	run := func(url string, args ...string) (stdout, stderr []byte) {
		t.Helper()
		profile := t.TempDir()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
			"--disable-component-update", "--disable-sync", "--no-first-run", "--disable-extensions",
			"--hide-scrollbars", "--user-data-dir=" + profile, "--enable-logging=stderr", "--v=0"}
		cmd := exec.CommandContext(ctx, browser, append(append(base, args...), url)...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v\n%s", browser, err, tail(errb.String()))
		}
		return out.Bytes(), errb.Bytes()
	}

	dom, stderr := run(page+"?selftest", "--dump-dom", "--virtual-time-budget=5000")
	if bytes.Contains(stderr, []byte("Uncaught")) {
		t.Errorf("script error in the console:\n%s", tail(string(stderr)))
	}
	body := regexp.MustCompile(`<body[^>]*>`).Find(dom)
	if body == nil {
		t.Fatalf("no <body> in the browser's DOM:\n%s", tail(string(dom)))
	}
	if !bytes.Contains(body, []byte(`data-ready="1"`)) {
		t.Errorf("the page's script did not finish: %s", body)
	}
	if m := regexp.MustCompile(`data-error="([^"]*)"`).FindSubmatch(body); m != nil {
		t.Errorf("script error: %s", m[1])
	}
	if m := regexp.MustCompile(`data-selftest="([^"]*)"`).FindSubmatch(body); m == nil || !bytes.HasPrefix(m[1], []byte("ok")) {
		t.Errorf("the page's self-check failed: %s", body)
	} else {
		t.Logf("self-check: %s", m[1])
	}
	if n := bytes.Count(dom, []byte("<svg")); n < plots {
		t.Errorf("the browser's DOM has %d SVGs, want %d plots", n, plots)
	}

	shot := filepath.Join(t.TempDir(), "report.png")
	if keep := os.Getenv("DISTBENCH_SCREENSHOT"); keep != "" {
		shot = keep
	}
	run(page, "--screenshot="+shot, "--window-size=1280,4000", "--virtual-time-budget=5000") // as a reader first sees it: unsorted
	checkScreenshot(t, shot)
}

// checkVectorAndData: every plot the markdown links has its SVG, and every
// table is followed by a link to its CSV, which holds the table's rows.
func checkVectorAndData(t *testing.T, dir string, md []byte) {
	t.Helper()
	for _, m := range imgLink.FindAllSubmatch(md, -1) {
		if _, err := os.Stat(svgName(dir, string(m[1]))); err != nil {
			t.Errorf("plot %s has no SVG: %v", m[1], err)
		}
	}
	tables := regexp.MustCompile(`(?m)^\|[ :]*-[-:| ]*\|\n((?:\|.*\|\n)*)\n\[CSV\]\(([^)]+)\)`).FindAllSubmatch(md, -1)
	if all := len(regexp.MustCompile(`(?m)^\|[ :]*-[-:| ]*\|$`).FindAll(md, -1)); len(tables) != all || all == 0 {
		t.Errorf("%d of %d tables have a CSV", len(tables), all)
	}
	for _, m := range tables {
		data, err := os.ReadFile(filepath.Join(dir, string(m[2])))
		if err != nil {
			t.Errorf("table's CSV: %v", err)
			continue
		}
		if rows, lines := bytes.Count(m[1], []byte("\n")), bytes.Count(data, []byte("\n")); lines < rows+1 {
			t.Errorf("%s: %d lines for a table of %d rows", m[2], lines, rows)
		}
	}
}

// checkSelfContained: nothing in the page is fetched from anywhere.
func checkSelfContained(t *testing.T, page []byte) {
	t.Helper()
	for _, re := range []string{`<(?:script|img|iframe|link)[^>]*\s(?:src|href)="`, `url\(`, `@import`} {
		if m := regexp.MustCompile(re).Find(page); m != nil {
			t.Errorf("report.html loads something: %s", m)
		}
	}
	// Links may point to the run's own files (SVG, PNG, CSV) or within
	// the page; nothing else.
	for _, m := range regexp.MustCompile(`href="([^"]*)"`).FindAllSubmatch(page, -1) {
		h := string(m[1])
		if !strings.HasPrefix(h, "#") && !strings.HasPrefix(h, "plots/") && !strings.HasPrefix(h, "tables/") {
			t.Errorf("report.html links outside the run: %q", h)
		}
	}
}

// checkScreenshot: the screenshot decodes, is mostly the page's white with
// text on it (not blank), and shows the plots: pixels of the palette's
// colours that only the plots draw.
func checkScreenshot(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	if b.Dx() < 800 || b.Dy() < 600 {
		t.Fatalf("screenshot is %v", b)
	}
	var dark, coloured, total int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			total++
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if r < 100 && g < 100 && bl < 100 {
				dark++ // text
			}
			for _, c := range palette[:4] { // the series of the plots above the fold
				if near(r, uint32(c.R)) && near(g, uint32(c.G)) && near(bl, uint32(c.B)) {
					coloured++
				}
			}
		}
	}
	t.Logf("screenshot %v: %.2f%% dark (text), %.3f%% the plots' colours", b.Size(), 100*float64(dark)/float64(total), 100*float64(coloured)/float64(total))
	if dark < total/1000 {
		t.Errorf("screenshot is blank: %d of %d sampled pixels dark", dark, total)
	}
	if coloured < total/2000 {
		t.Errorf("screenshot shows no plot: %d of %d sampled pixels in the plots' colours", coloured, total)
	}
}

func near(a, b uint32) bool { return a+12 >= b && b+12 >= a }

func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
