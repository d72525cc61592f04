#!/usr/bin/env bash
# Faults a trainer meets, and what must survive them (meson runs it as the `faults` test):
#   1. kill -9 at a random moment (even mid-checkpoint), then resume: the run ends bit for bit as
#      one that was never killed;
#   2. Ctrl-C: the step finishes, a checkpoint is written, exit status 130; a second trainer on
#      the same directory meanwhile is refused; resuming ends as the straight run;
#   4. (run before 2) resuming on another --threads: the same weights, bit for bit;
#   3. a full disk while resuming: the resume fails with the system's reason and metrics.jsonl and
#      best.safetensors stay as they were (a small tmpfs when this user may mount one, else a file
#      size limit, `ulimit -f`, which fails writes the same way).
# (Divergence is tested in tests/core/train/test_loop.cpp: the command line no longer accepts a
# learning rate that makes this model's weights overflow.)
#   run_fault_test.sh LM_EXECUTABLE
set -uo pipefail
lm=$(realpath "$1")
tmp=$(mktemp -d)
mounted=""
cleanup() { [ -n "$mounted" ] && umount "$mounted" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
cd "$tmp"
export OPENBLAS_NUM_THREADS=1
# Threads that wait for work sleep instead of spinning: part 4 runs 2 and 3 threads on a machine
# that CI loads with the sanitizer build's compilers, where spinning threads take the cores their
# team's own work needs (a 60-step resume took minutes). It changes no number, only the waiting.
export OMP_WAIT_POLICY=passive
fail() { echo "FAIL (faults): $*"; exit 1; }
python3 -c "
import random; random.seed(2)
w = 'to be or not that is the question whether tis nobler in mind suffer'.split()
open('text.txt', 'w').write('\n'.join(' '.join(random.choice(w) for _ in range(10)) for _ in range(2000)) + '\n')"
run=(--data text.txt --max-len 16 --d-model 16 --d-ff 32 --n-layers 1 --n-heads 2 --batch-size 4 --threads 1
     --schedule rsqrt --dropout 0.1 --seed 7)
final() { grep "\"step\":$2," "$1/metrics.jsonl" | grep -v steps_per_second; }   # the records of step N
# kill_at_step STEP PID DIR: kill -9 the trainer PID once DIR/metrics.jsonl records step STEP or
# later, and then a random 0-49 ms more, so the kill lands anywhere in a stretch of steps, a
# checkpoint's writing included. Timed by the run's own progress, not by the clock: a clock-timed
# kill misses when the machine's load changes between the run that measured the time and the run
# that is killed (CI compiles the sanitizer build beside this test).
kill_at_step() {
  local last=""
  for _ in $(seq 6000); do
    last=$(grep -o '"step":[0-9]*' "$3/metrics.jsonl" 2>/dev/null | tail -1 | cut -d: -f2)
    [ -n "$last" ] && [ "$last" -ge "$1" ] && break
    kill -0 "$2" 2>/dev/null || break
    sleep 0.01
  done
  sleep "0.0$(printf '%02d' $((RANDOM % 50)))"
  kill -9 "$2" 2>/dev/null
  wait "$2" 2>/dev/null
  [ -n "$last" ] && [ "$last" -ge "$1" ] || fail "the trainer in $3 did not reach step $1 (last recorded: ${last:-none})"
}

N=4000   # a few seconds; the kills below land at a random step between 5% and 75% of the run
"$lm" train --out straight --steps $N --eval-every 50 "${run[@]}" >straight.log 2>&1 || { cat straight.log; fail "straight run"; }
[ -n "$(final straight $N)" ] || fail "no records of step $N"

# 1. kill -9 at random moments, then resume (flags left out: they come from the checkpoint; --threads
# defines nothing, and one thread keeps the test quick on a loaded machine: part 4 changes it).
for attempt in 1 2 3; do
  rm -rf killed
  "$lm" train --out killed --steps $N --eval-every 50 "${run[@]}" >killed.log 2>&1 &
  pid=$!
  at_step=$(( N * (5 + RANDOM % 71) / 100 ))
  kill_at_step "$at_step" "$pid" killed
  grep -q "^trained" killed.log && fail "attempt $attempt: the run ended before it was killed at step $at_step of $N"
  "$lm" train --out killed --steps $N --eval-every 50 --threads 1 >resumed.log 2>&1 || { cat resumed.log; fail "resume after kill -9 (attempt $attempt)"; }
  [ "$(final killed $N)" = "$(final straight $N)" ] || fail "killed at a random moment and resumed, attempt $attempt: the run differs"
  [ "$(grep -c "\"step\":$N,\"split\":\"eval\",\"name\":\"loss\"" killed/metrics.jsonl)" = 1 ] || fail "duplicated metrics after resume"
done

# 4. Another thread count on resume: training's numbers do not depend on it (runtime.hpp, FIXED
# PARTS), so a run trained on 1 thread, killed, and resumed on 3 ends with the same weights and
# optimizer slots, bit for bit. A model large enough that its products, layer norms and attention
# are cut into parts (the tiny one above runs every op whole).
same_tensors() {  # same_tensors A.safetensors B.safetensors: every tensor's bytes equal
  python3 - "$1" "$2" <<'PY'
import json, struct, sys
def tensors(path):
    b = open(path, 'rb').read(); n = struct.unpack('<Q', b[:8])[0]; h = json.loads(b[8:8 + n])
    return {k: b[8 + n + v['data_offsets'][0]:8 + n + v['data_offsets'][1]] for k, v in h.items() if k != '__metadata__'}
a, b = tensors(sys.argv[1]), tensors(sys.argv[2])
differ = [k for k in a if a[k] != b.get(k)]
if differ or a.keys() != b.keys():
    print(f"{len(differ)} of {len(a)} tensors differ, e.g. {differ[:3]}"); sys.exit(1)
PY
}
big=(--data text.txt --max-len 32 --d-model 64 --d-ff 256 --n-layers 2 --n-heads 4 --batch-size 16 --threads 1
     --schedule rsqrt --dropout 0.1 --seed 5)
N2=120
"$lm" train --out threads1 --steps $N2 --eval-every 20 "${big[@]}" >threads1.log 2>&1 || { cat threads1.log; fail "run on 1 thread"; }
"$lm" train --out threads13 --steps 60 --eval-every 20 "${big[@]}" >threads13.log 2>&1 || { cat threads13.log; fail "first half on 1 thread"; }
"$lm" train --out threads13 --steps $N2 --threads 3 >threads13.log 2>&1 || { cat threads13.log; fail "resume on 3 threads"; }
same_tensors threads1/model.safetensors threads13/model.safetensors || fail "resumed on 3 threads: the weights differ from the run on 1"
rm -rf threads13
"$lm" train --out threads13 --steps $N2 --eval-every 20 "${big[@]}" >threads13.log 2>&1 &
pid=$!
kill_at_step $((20 + RANDOM % 41)) "$pid" threads13   # its records come every 20 steps: killed after 20, 40 or 60
grep -q "^trained" threads13.log && fail "the run to resume on 2 threads ended before it was killed"
"$lm" train --out threads13 --steps $N2 --threads 2 >threads13.log 2>&1 || { cat threads13.log; fail "resume on 2 threads after kill -9"; }
same_tensors threads1/model.safetensors threads13/model.safetensors || fail "killed, resumed on 2 threads: the weights differ from the run on 1"

# 2. Ctrl-C, and a second trainer meanwhile.
rm -rf interrupted
"$lm" train --out interrupted --steps 1000000 --eval-every 100000 "${run[@]}" >interrupted.log 2>&1 &
pid=$!
for _ in $(seq 600); do grep -q "Step      1: eval" interrupted.log && break; sleep 0.1; done
grep -q "Step      1: eval" interrupted.log || { cat interrupted.log; fail "the trainer did not reach step 1 in 60 s"; }
"$lm" train --out interrupted --steps 10 >second.log 2>&1 && fail "a second trainer on one run directory was accepted"
grep -q "another trainer (pid $pid) is using this run directory" second.log || { cat second.log; fail "second trainer's message"; }
kill -INT "$pid"
wait "$pid"
status=$?
[ "$status" -eq 130 ] || { cat interrupted.log; fail "Ctrl-C: exit status $status, expected 130"; }
grep -q "stopped by Ctrl-C (SIGINT) at step [0-9]* of 1000000, after writing its checkpoint" interrupted.log || { tail -3 interrupted.log; fail "Ctrl-C message"; }
step=$(sed -n 's/.*stopped by Ctrl-C (SIGINT) at step \([0-9]*\).*/\1/p' interrupted.log)
[ "$step" -gt 1 ] || fail "Ctrl-C stopped at step $step"
grep -q "\"step\":$step,\"split\":\"eval\"" interrupted/metrics.jsonl || fail "no checkpoint records at the interrupted step $step"
# A lock left by a killed trainer is no lock: the next one starts.
"$lm" train --out killed --steps $((N + 1)) --eval-every 50 --threads 1 >stale.log 2>&1 || { cat stale.log; fail "a stale lock file blocked training"; }

# 3. A full disk while resuming.
full=$tmp/full
mkdir -p "$full"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=4m tmpfs "$full" 2>/dev/null; then
  mounted=$full
  how="tmpfs"
fi
cp -r straight "$full/run"
rm -f "$full/run/.lock"
echo '{"step":999999,"split":"eval","name":"loss","value":1.0}' >>"$full/run/metrics.jsonl"   # to be dropped on resume
cp "$full/run/metrics.jsonl" metrics.before
cp "$full/run/best.safetensors" best.before
if [ -n "$mounted" ]; then
  dd if=/dev/zero of="$full/filler" bs=64k >/dev/null 2>&1   # until the disk is full
  "$lm" train --out "$full/run" --steps $((N + 100)) --threads 1 >full.log 2>&1
  status=$?
  rm -f "$full/filler"
else
  how="ulimit -f"
  (trap '' XFSZ; ulimit -f 4; exec "$lm" train --out "$full/run" --steps $((N + 100)) --threads 1) >full.log 2>&1
  status=$?
fi
[ "$status" -ne 0 ] && [ "$status" -lt 128 ] || { cat full.log; fail "full disk ($how): exit status $status"; }
grep -Eq "(metrics.jsonl|run.json).tmp: writing failed: (No space left on device|File too large)|\.lock|cannot" full.log || { cat full.log; fail "full disk ($how): message"; }
cmp -s metrics.before "$full/run/metrics.jsonl" || fail "full disk ($how): metrics.jsonl changed"
cmp -s best.before "$full/run/best.safetensors" || fail "full disk ($how): best.safetensors changed"
ls "$full/run" | grep -q '\.tmp$' && fail "full disk ($how): a temporary file was left behind"

echo "faults ok ($how)"
