#!/usr/bin/env bash
# Data parallelism across real processes (core/dist, the Loop's MPI mode):
#   1. the communicator: tests/dist/mpi_check alone, then under `mpirun -np 2` (each rank says "ok");
#   2. a TransformerLM with dropout trained 6 steps on 1 process and on 2: every loss and metric, and
#      the final weights, equal within 1e-5 relative (loop_check compare prints the bounds reached);
#   3. a checkpoint written by 2 processes resumed on 1 and on 2 continues the same curve;
#   4. a global batch the processes do not divide: a clear error before training;
#   5. a rank killed mid-run: mpirun ends within seconds naming it, and the last checkpoint loads;
#   6. a step too large for the machine: both processes refuse it, and neither aborts the run;
#   7. the same refusal from an example's command line (LM): said once for the run, not once a process.
# Usage: run_mpi_test.sh MPI_CHECK LOOP_CHECK LM
set -euo pipefail
exe=$1
loop=$2
lm=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# --oversubscribe: the test may ask for more ranks than free cores; --allow-run-as-root: CI runs as root.
mpi=(mpirun --oversubscribe --allow-run-as-root -np 2)
fail() { echo "mpi test: $1"; exit 1; }

"$exe" >"$tmp/one" 2>&1 || { cat "$tmp/one"; fail "alone it failed"; }
grep -q "^ok: 1 process" "$tmp/one" || { cat "$tmp/one"; fail "alone it is not one process"; }
"${mpi[@]}" "$exe" >"$tmp/two" 2>&1 || { cat "$tmp/two"; fail "mpirun -np 2 failed"; }
[ "$(grep -c '^ok: MPI, rank [01] of 2' "$tmp/two")" -eq 2 ] || { cat "$tmp/two"; fail "not two ranks reporting ok"; }
echo "communicator ok: one process alone, and two under mpirun"

run() { "$@" >"$tmp/log" 2>&1 || { cat "$tmp/log"; fail "$* failed"; }; }
run "$loop" train "$tmp/one_process" 6
run "${mpi[@]}" "$loop" train "$tmp/two_processes" 6
[ "$(grep -c '^ok: MPI, rank [01] of 2 .* trained to step 6' "$tmp/log")" -eq 2 ] || { cat "$tmp/log"; fail "two ranks did not train"; }
"$loop" compare "$tmp/one_process" "$tmp/two_processes" || fail "2 processes differ from 1"

run "${mpi[@]}" "$loop" train "$tmp/resumed_on_one" 3
run "$loop" train "$tmp/resumed_on_one" 6
grep -q "Resumed from" "$tmp/log" || { cat "$tmp/log"; fail "1 process did not resume"; }
"$loop" compare "$tmp/one_process" "$tmp/resumed_on_one" || fail "2 processes, then 1, differ from 1"
run "${mpi[@]}" "$loop" train "$tmp/resumed_on_two" 3
run "${mpi[@]}" "$loop" train "$tmp/resumed_on_two" 6
grep -q "Resumed from .* on 2 processes" "$tmp/log" || { cat "$tmp/log"; fail "2 processes did not resume"; }
"$loop" compare "$tmp/one_process" "$tmp/resumed_on_two" || fail "2 processes, then 2 again, differ from 1"

if "${mpi[@]}" "$loop" train "$tmp/odd" 2 3 >"$tmp/log" 2>&1; then cat "$tmp/log"; fail "a batch of 3 rows on 2 processes trained"; fi
grep -q "global batch of 3 rows does not divide among 2 processes" "$tmp/log" || { cat "$tmp/log"; fail "no clear error for 3 rows on 2 processes"; }
[ ! -e "$tmp/odd/model.safetensors" ] || fail "a batch of 3 rows on 2 processes wrote a checkpoint"
echo "indivisible batch ok: $(grep -m1 'does not divide' "$tmp/log")"

# A rank dies: start a long run, wait for its first checkpoint, kill rank 1.
"${mpi[@]}" "$loop" train "$tmp/killed" 1000000 >"$tmp/killed.log" 2>&1 &
mpirun_pid=$!
for _ in $(seq 300); do [ -e "$tmp/killed/model.safetensors" ] && break; sleep 0.1; done
[ -e "$tmp/killed/model.safetensors" ] || { cat "$tmp/killed.log"; fail "the long run wrote no checkpoint"; }
victim=""
for pid in $(pgrep -f "loop_check train $tmp/killed"); do
  # grep reads a process substitution, not a pipe: under pipefail, tr killed by SIGPIPE after grep's
  # early match would fail the test.
  if grep -qx 'OMPI_COMM_WORLD_RANK=1' < <(tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null); then victim=$pid; fi
done
[ -n "$victim" ] || fail "rank 1's process not found"
killed_at=$(date +%s)
kill -9 "$victim"
status=0
for _ in $(seq 300); do kill -0 "$mpirun_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$mpirun_pid" 2>/dev/null; then kill -9 "$mpirun_pid"; fail "30 s after rank 1 died, mpirun still runs (a hang)"; fi
wait "$mpirun_pid" || status=$?
seconds=$(( $(date +%s) - killed_at ))
[ "$status" -ne 0 ] || { cat "$tmp/killed.log"; fail "mpirun exited 0 after a rank died"; }
grep -q "rank 1" "$tmp/killed.log" || { cat "$tmp/killed.log"; fail "the error does not name rank 1"; }
step=$("$loop" train "$tmp/killed" 0 2>&1 | sed -n 's/.*trained to step \([0-9]*\).*/\1/p')
[ -n "$step" ] || fail "the checkpoint left by the killed run does not load"
echo "killed rank ok: mpirun exited ($status) ${seconds} s after rank 1 died: $(grep -m1 'rank 1' "$tmp/killed.log" | cut -c1-120); the checkpoint (step $step) loads"
# An error on one process alone: process 1 cannot read batch 3. Process 0 would wait for it in the
# step's sum forever, and it for process 0 in MPI_Finalize; the run must end, naming the error.
started=$(date +%s)
status=0
timeout 60 "${mpi[@]}" "$loop" train "$tmp/one_fails" 6 4 3 >"$tmp/fails.log" 2>&1 || status=$?
[ "$status" -ne 124 ] || { cat "$tmp/fails.log"; fail "an error on rank 1 left the run hanging (killed after 60 s)"; }
[ "$status" -ne 0 ] || { cat "$tmp/fails.log"; fail "mpirun exited 0 after an error on rank 1"; }
grep -q "process 1 of 2: batch 3: unreadable" "$tmp/fails.log" || { cat "$tmp/fails.log"; fail "the error is not named"; }
echo "error on one rank ok: mpirun exited ($status) $(( $(date +%s) - started )) s after starting: $(grep -m1 'unreadable' "$tmp/fails.log")"
# A step too large for the machine: every process refuses it together (they agree through a sum)
# and returns; none calls MPI_Abort.
status=0
timeout 120 "${mpi[@]}" "$loop" too-large "$tmp/too_large" >"$tmp/large.log" 2>&1 || status=$?
[ "$status" -ne 124 ] || { cat "$tmp/large.log"; fail "a step too large left the run hanging (killed after 120 s)"; }
[ "$(grep -c '^refused: MPI, rank [01] of 2 .*: Loop: a training step of task 0 needs about' "$tmp/large.log")" -eq 2 ] ||
  { cat "$tmp/large.log"; fail "not both processes refused the step too large"; }
! grep -q "MPI_ABORT" "$tmp/large.log" || { cat "$tmp/large.log"; fail "a refusal every process made aborted the run"; }
echo "step too large ok: both processes refused it, none aborted: $(grep -m1 -o 'needs about [0-9.]* GB' "$tmp/large.log")"
# The examples say an error every process met once: process 0 says it, the others only what differs.
printf 'To be, or not to be, that is the question.\n%.0s' {1..600} >"$tmp/text.txt"
status=0
timeout 120 "${mpi[@]}" "$lm" train --data "$tmp/text.txt" --out "$tmp/lm_large" --d-model 16 --d-ff 1048576 \
  --n-layers 1 --n-heads 2 --batch-size 128 --max-len 128 --steps 1 --threads 1 >"$tmp/lm_large.log" 2>&1 || status=$?
[ "$status" -ne 124 ] || { cat "$tmp/lm_large.log"; fail "lm: a step too large left the run hanging"; }
[ "$status" -ne 0 ] || { cat "$tmp/lm_large.log"; fail "lm: mpirun exited 0 after a step too large"; }
[ "$(grep -c 'needs about' "$tmp/lm_large.log")" -eq 1 ] ||
  { cat "$tmp/lm_large.log"; fail "lm: the refusal is not said exactly once"; }
! grep -q "MPI_ABORT" "$tmp/lm_large.log" || { cat "$tmp/lm_large.log"; fail "lm: a refusal every process made aborted"; }
echo "lm's refusal said once ok: $(grep -m1 -o 'lm: Loop: a training step of task 0 needs about [0-9.]* GB' "$tmp/lm_large.log")"
echo "mpi test ok"
