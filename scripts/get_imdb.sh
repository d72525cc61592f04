#!/usr/bin/env bash
# Downloads the official IMDB archive (aclImdb_v1.tar.gz, Maas et al. 2011, ~80 MB) and converts
# it to DIR/train.tsv.gz and DIR/test.tsv.gz, exactly as ../shared/data/imdb was made:
# `<br />` -> space, whitespace runs -> one space, trimmed; `label<TAB>text` with 0 = negative,
# 1 = positive; lines alternate neg/pos by review id.
#
#   scripts/get_imdb.sh [DIR]                       # default DIR: data/imdb
#   scripts/get_imdb.sh DIR --archive FILE.tar.gz   # convert an archive you already have
#   scripts/get_imdb.sh DIR --tree aclImdb/         # convert an unpacked archive
#
# (build/examples/sentiment also reads an unpacked aclImdb/ directly; the TSV is smaller and
# loads faster.)
set -euo pipefail
dir=${1:-data/imdb}
shift || true
url=https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz
archive=""
tree=""
while [ $# -gt 0 ]; do
  case "$1" in
    --archive) archive=$2; shift ;;
    --tree) tree=$2; shift ;;
    *) echo "get_imdb.sh: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
mkdir -p "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ -z "$tree" ]; then
  if [ -z "$archive" ]; then
    archive=$work/aclImdb_v1.tar.gz
    echo "downloading $url"
    if command -v curl >/dev/null; then curl -fL --retry 3 -o "$archive" "$url"
    elif command -v wget >/dev/null; then wget -O "$archive" "$url"
    else echo "get_imdb.sh: needs curl or wget (apt-get install curl)" >&2; exit 1; fi
  fi
  echo "unpacking $archive"
  tar -xzf "$archive" -C "$work" aclImdb/train/pos aclImdb/train/neg aclImdb/test/pos aclImdb/test/neg
  tree=$work/aclImdb
fi

python3 - "$tree" "$dir" <<'PY'
import gzip, os, re, sys
tree, out = sys.argv[1], sys.argv[2]
br = re.compile(r"<br\s*/?>", re.IGNORECASE)
ws = re.compile(r"\s+")
for split in ("train", "test"):
    files = {}
    for label, name in ((0, "neg"), (1, "pos")):
        d = os.path.join(tree, split, name)
        names = sorted(os.listdir(d), key=lambda f: int(f.split("_")[0]))
        files[label] = [os.path.join(d, f) for f in names if f.endswith(".txt")]
    tmp = os.path.join(out, split + ".tsv.gz.tmp")
    n = 0
    with gzip.GzipFile(tmp, "wb", compresslevel=9, mtime=0) as f:
        for i in range(max(len(files[0]), len(files[1]))):
            for label in (0, 1):
                if i < len(files[label]):
                    text = open(files[label][i], encoding="utf-8").read()
                    text = ws.sub(" ", br.sub(" ", text)).strip()
                    f.write(f"{label}\t{text}\n".encode("utf-8"))
                    n += 1
    os.replace(tmp, os.path.join(out, split + ".tsv.gz"))
    print(f"{out}/{split}.tsv.gz: {n} reviews")
PY
