#!/usr/bin/env bash
# The MPI communicator across real processes (core/dist): tests/dist/mpi_check alone, then under
# `mpirun -np 2`; each rank must report "ok". Usage: run_mpi_test.sh MPI_CHECK_EXECUTABLE
set -euo pipefail
exe=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$exe" >"$tmp/one" 2>&1 || { cat "$tmp/one"; echo "mpi test: alone it failed"; exit 1; }
grep -q "^ok: 1 process" "$tmp/one" || { cat "$tmp/one"; echo "mpi test: alone it is not one process"; exit 1; }
# --oversubscribe: the test may ask for more ranks than free cores; --allow-run-as-root: CI runs as root.
mpirun --oversubscribe --allow-run-as-root -np 2 "$exe" >"$tmp/two" 2>&1 || { cat "$tmp/two"; echo "mpi test: mpirun -np 2 failed"; exit 1; }
[ "$(grep -c '^ok: MPI, rank [01] of 2' "$tmp/two")" -eq 2 ] || { cat "$tmp/two"; echo "mpi test: not two ranks reporting ok"; exit 1; }
echo "mpi test ok: one process alone, and two under mpirun"
