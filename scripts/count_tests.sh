# Sourced by scripts/test.sh and scripts/sanitize.sh: runs test programs, prints one line per
# program and adds its cases to $passed and $failed.
passed=0
failed=0
count_log=$(mktemp)

# run_suite EXE [NOTE [DOCTEST_ARGS...]] — a doctest executable; its summary line gives the counts.
run_suite() {
  local exe=$1 note=${2:-} start=$SECONDS status line p f
  "$exe" --no-intro "${@:3}" >"$count_log" 2>&1
  status=$?
  # doctest's summary: "[doctest] test cases: 12 | 12 passed | 0 failed | 0 skipped"
  line=$(grep -E '^\[doctest\] test cases:' "$count_log" | tail -1)
  p=$(sed -E 's/.*\| *([0-9]+) passed.*/\1/' <<<"$line")
  f=$(sed -E 's/.*\| *([0-9]+) failed.*/\1/' <<<"$line")
  if [ -z "$line" ]; then p=0; f=1; fi
  if [ "$status" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi   # crashed outside a test case (or a leak report)
  count "$(basename "$exe")" "$p" "$f" "$note" $start
}

# run_catalogue BUILD_DIR [NOTE] — the bad-input catalogue, one test per case.
run_catalogue() {
  start_catalogue "$1"
  finish_catalogue "${2:-}"
}

# start_catalogue BUILD_DIR — the catalogue in the background (one program at a time on one
# thread: a suite can run beside it); finish_catalogue [NOTE] waits for it and counts its cases.
start_catalogue() {
  catalogue_start=$SECONDS
  catalogue_log=$(mktemp)
  scripts/run_bad_inputs_test.sh "$1" >"$catalogue_log" 2>&1 &
  catalogue_pid=$!
}
finish_catalogue() {
  local line p f
  wait "$catalogue_pid"
  mv "$catalogue_log" "$count_log"
  line=$(grep -E '^[0-9]+ passed, [0-9]+ failed \(bad-input catalogue\)' "$count_log" | tail -1)
  if [ -n "$line" ]; then p=${line%% passed*}; f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line"); else p=0; f=1; fi
  count bad_inputs "$p" "$f" "${1:-}" $catalogue_start
}

# run_meson_test BUILD_DIR NAME — a scripted test (examples' smoke tests, faults): one test.
run_meson_test() {
  local start=$SECONDS
  if meson test -C "$1" --no-rebuild "$2" >"$count_log" 2>&1; then
    count "$2" 1 0 "" $start
  else
    tail -40 "$1/meson-logs/testlog.txt" >>"$count_log" 2>/dev/null
    count "$2" 0 1 "" $start
  fi
}

# run_site_test — the course site in headless Chromium (scripts/site_test.py), one test per page.
run_site_test() {
  local start=$SECONDS line p f
  /usr/bin/python3 scripts/site_test.py >"$count_log" 2>&1
  line=$(grep -E '^site: [0-9]+ pages passed, [0-9]+ failed' "$count_log" | tail -1)
  if [ -n "$line" ]; then
    p=$(sed -E 's/^site: ([0-9]+) pages.*/\1/' <<<"$line"); f=$(sed -E 's/.* ([0-9]+) failed.*/\1/' <<<"$line")
  else p=0; f=1; fi
  count site "$p" "$f" "" $start
}

count() {  # count NAME PASSED FAILED NOTE START
  printf '%-18s %4s passed %4s failed  (%d s%s)\n' "$1" "$2" "$3" $((SECONDS - $5)) "${4:+, $4}"
  [ "$3" -ne 0 ] && cat "$count_log"
  passed=$((passed + $2))
  failed=$((failed + $3))
}

finish() {  # prints the total and returns 0 only when nothing failed
  rm -f "$count_log"
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}
