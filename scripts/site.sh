#!/usr/bin/env bash
# Builds the course (docs/, docs/ko/) into a static, offline site with Debian's packages:
#
#   scripts/site.sh [OUT]        (default build/site; English at OUT/index.html, Korean at OUT/ko/)
#   python3 -m http.server -d build/site 8000     then open http://localhost:8000 (search needs a server)
#
# mkdocs with the Material theme and pymdown-extensions; math written as $…$ / $$…$$ is rendered
# by KaTeX from libjs-katex, copied into the site — nothing is fetched from the network. Each
# language is its own mkdocs build (its own navigation and search), with a switch between them.
# scripts/site_test.py loads every page of both in headless Chromium (scripts/test.sh runs it).
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(realpath -m "${1:-build/site}")
source scripts/packages.sh
install_packages site mkdocs mkdocs-material python3-pymdownx libjs-katex

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
# English: docs/*.md and the images; Korean: docs/ko/*.md with the images beside them (its pages'
# ../images/ links made images/: each language's site stands alone).
mkdir -p "$stage/en" "$stage/ko"
# Links across the two editions point at the other build's pages (…/README.md → …/index.html), as
# HTML: mkdocs checks Markdown links against its own build only.
across='s#\[\([^]]*\)\](\(\.\./\|ko/\)README\.md)#<a href="\2index.html">\1</a>#g;
        s#\[\([^]]*\)\](\(\.\./\|ko/\)\([0-9a-z_]*\)\.md)#<a href="\2\3.html">\1</a>#g'
for f in docs/*.md; do sed "$across" "$f" > "$stage/en/$(basename "$f")"; done
mv "$stage/en/README.md" "$stage/en/index.md"
cp -r docs/images "$stage/en/images"
for f in docs/ko/*.md; do sed -e 's|](\.\./images/|](images/|g' -e 's|"\.\./images/|"images/|g' -e "$across" "$f" > "$stage/ko/$(basename "$f")"; done
mv "$stage/ko/README.md" "$stage/ko/index.md"
cp -r docs/images "$stage/ko/images"
for lang in en ko; do
  mkdir -p "$stage/$lang/js" "$stage/$lang/css"
  cp scripts/site/math.js scripts/site/attention.js scripts/site/selftest.js "$stage/$lang/js/"
  cp scripts/site/extra.css "$stage/$lang/css/"
done

# One configuration per language from scripts/site/mkdocs.yml (Material 8.2 calls Korean "kr").
config() {   # lang docs_dir site_dir site_name link_to_english link_to_korean
  sed -e "s|@LANG@|$1|g" -e "s|@DOCS@|$2|g" -e "s|@SITE@|$3|g" -e "s|@NAME@|$4|g" \
      -e "s|@EN@|$5|g" -e "s|@KO@|$6|g" scripts/site/mkdocs.yml
}
config en "$stage/en" "$out" "ctrax course" "index.html" "ko/index.html" > "$stage/mkdocs.en.yml"
config kr "$stage/ko" "$out/ko" "ctrax 강의" "../index.html" "index.html" > "$stage/mkdocs.ko.yml"
build() {   # mkdocs build, its warnings shown only when it fails (strict: a warning fails it)
  if ! /usr/bin/mkdocs build -f "$1" >"$stage/log" 2>&1; then
    grep -v "^INFO" "$stage/log" >&2
    exit 1
  fi
}
rm -rf "$out"
build "$stage/mkdocs.en.yml"
build "$stage/mkdocs.ko.yml"
# KaTeX (its fonts too) beside the pages of each language, which load it by a relative path.
cp -r /usr/share/javascript/katex "$out/katex"
cp -r /usr/share/javascript/katex "$out/ko/katex"
echo "site: $out/index.html (English), $out/ko/index.html (Korean)"
