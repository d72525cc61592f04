#!/usr/bin/env python3
"""The course site in a real browser: builds it (scripts/site.sh), serves it, and loads every page
of both languages in headless Chromium.

    scripts/site_test.py [--site DIR] [--screenshots DIR]

A page fails on an image that did not load, math KaTeX did not render, an error raised by its
scripts or a resource that failed to load (Chromium's console), or a link to a page or an anchor
of this site that does not exist. Each page is loaded with "?selftest", which makes
scripts/site/selftest.js report from inside the page; one browser loads them all in turn, in an
iframe of a harness page the test writes into the site while it runs. The site must hold math somewhere (chapter 3
does), so an unrendered formula cannot pass unseen. Prints one line per page and ends with
"site: N pages passed, N failed"; exit status 1 if any failed. --screenshots also writes the
README's preview images (and site_preview.png, the three side by side). Needs Debian's chromium (and what scripts/site.sh installs).
"""
import argparse
import functools
import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
SCREENSHOTS = [("index.html", "site_index.png"), ("03_attention.html", "site_attention.png"),
               ("ko/07_the_transformer.html", "site_ko_transformer.png")]


# Loads every page in an iframe, one after another, in one browser: each page's self-test
# (selftest.js) reports into its body; the harness collects the reports with the page's links and
# ids, and writes them all into its own body for --dump-dom.
HARNESS = """<!doctype html><meta charset="utf-8"><body><iframe id="f" style="width:1200px;height:800px"></iframe>
<script>
const pages = %s, results = {};
let i = 0;
function next() {
  if (i === pages.length) { document.body.setAttribute("data-results", JSON.stringify(results)); return; }
  const path = pages[i++], frame = document.getElementById("f"), started = Date.now();
  frame.onload = function () {
    const poll = function () {
      const doc = frame.contentDocument, report = doc && doc.body && doc.body.getAttribute("data-selftest");
      if (report || Date.now() - started > 20000) {
        results[path] = {report: report ? JSON.parse(report) : null,
                         links: doc ? Array.from(doc.querySelectorAll("a[href]"), a => a.getAttribute("href")) : [],
                         ids: doc ? Array.from(doc.querySelectorAll("[id]"), e => e.id) : []};
        next();
      } else setTimeout(poll, 50);
    };
    poll();
  };
  frame.src = path + "?selftest";
}
next();
</script>"""


def chromium(args, timeout=600):
    cmd = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-extensions",
           "--disable-background-networking", "--enable-logging=stderr", "--v=0"] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def load_all(site, base, pages):
    """Every page's report, links and ids, and Chromium's console lines that name a page."""
    with open(os.path.join(site, "selftest_harness.html"), "w", encoding="utf-8") as f:
        f.write(HARNESS % json.dumps(pages))
    r = chromium(["--virtual-time-budget=600000", "--dump-dom", f"{base}/selftest_harness.html"])
    os.remove(os.path.join(site, "selftest_harness.html"))
    m = re.search(r'data-results="([^"]*)"', r.stdout)
    results = json.loads(html.unescape(m.group(1))) if m else {}
    console = [line for line in r.stderr.splitlines() if "CONSOLE" in line]
    return results, console


def source(console_line):
    """The page a Chromium console line came from ('…, source: http://host:port/ko/index.html?selftest (12)')."""
    m = re.search(r"source: https?://[^/]+/([^?# ]*)", console_line)
    return m.group(1) if m else None


def check(site, pages, results, console):
    """Each page's problems: its self-test's, Chromium's console errors from it, its broken links."""
    out = {}
    for path in pages:
        r = results.get(path)
        problems = []
        if r is None or r["report"] is None:
            problems.append("the page's self-test did not report (its scripts did not run?)")
            r = {"report": {"problems": [], "math": 0, "images": 0}, "links": [], "ids": []}
        problems += r["report"]["problems"]
        problems += [f"console: {line.split('CONSOLE', 1)[1][:200]}" for line in console
                     if re.search(r"Uncaught|Failed to load|[Ee]rror", line) and source(line) == path]
        for href in r["links"]:
            url = urllib.parse.urlparse(href)
            if url.scheme or url.netloc:
                continue   # another site: not this test's business (this one fetches nothing)
            target = os.path.normpath(os.path.join(os.path.dirname(path), url.path)) if url.path else path
            if url.path and not os.path.exists(os.path.join(site, target)):
                problems.append(f"broken link: {href}")
            elif url.fragment and target in results and urllib.parse.unquote(url.fragment) not in results[target]["ids"]:
                problems.append(f"broken anchor: {href}")
        out[path] = (problems, r["report"])
    unplaced = [line for line in console if re.search(r"Uncaught|Failed to load|[Ee]rror", line)
                and source(line) not in pages]
    return out, unplaced


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(site):
    handler = functools.partial(QuietHandler, directory=site)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def preview(folder):
    """The three screenshots side by side: the README's site_preview.png (matplotlib)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(SCREENSHOTS), figsize=(6 * len(SCREENSHOTS), 4.2))
    for ax, (_, name) in zip(axes, SCREENSHOTS):
        ax.imshow(plt.imread(os.path.join(folder, name)))
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(os.path.join(folder, "site_preview.png"), dpi=100)
    print(f"site: {os.path.join(folder, 'site_preview.png')}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", help="a site scripts/site.sh built (default: build it into a temporary folder)")
    parser.add_argument("--screenshots", help="write the README's preview screenshots into this folder")
    args = parser.parse_args()
    if not CHROMIUM:
        print("site: chromium not found (apt-get install chromium)")
        return 1
    tmp = None
    site = args.site
    if not site:
        tmp = tempfile.mkdtemp()
        site = os.path.join(tmp, "site")
        subprocess.run([os.path.join(ROOT, "scripts", "site.sh"), site], check=True, stdout=subprocess.DEVNULL)
    server, base = serve(site)
    try:
        pages = sorted(os.path.relpath(os.path.join(d, f), site) for d, _, files in os.walk(site) for f in files
                       if f.endswith(".html") and f != "404.html" and "katex" not in d)
        results, console = load_all(site, base, pages)
        checked, unplaced = check(site, pages, results, console)
        failed, total_math = 0, 0
        for path in pages:
            problems, report = checked[path]
            total_math += report["math"]
            status = "ok" if not problems else "FAILED"
            print(f"{status:6} {path}  ({report['images']} images, {report['math']} formulas)")
            for p in problems:
                print(f"         {p}")
            failed += bool(problems)
        for line in unplaced:   # a resource of no page in particular (the harness's own, say)
            print(f"FAILED console: {line[:200]}")
            failed += 1
        if total_math == 0:
            print("FAILED the site holds no rendered math at all (chapter 3 should)")
            failed += 1
        if args.screenshots:
            os.makedirs(args.screenshots, exist_ok=True)
            for page, name in SCREENSHOTS:
                out = os.path.join(os.path.abspath(args.screenshots), name)
                chromium(["--window-size=1280,860", "--hide-scrollbars", "--virtual-time-budget=10000",
                          f"--screenshot={out}", f"{base}/{page}"])
                print(f"site: screenshot {out}")
            preview(args.screenshots)
        print(f"site: {len(pages) - failed} pages passed, {failed} failed")
        return 1 if failed else 0
    finally:
        server.shutdown()
        if tmp:
            shutil.rmtree(tmp)


if __name__ == "__main__":
    sys.exit(main())
