# Sourced by the scripts (demo.sh, test.sh, bench/run.sh): when OPENBLAS_CORETYPE is unset and
# OpenBLAS does not recognise this CPU — it then runs generic SSE3 kernels, ~4x slower here —
# export the core that `build/examples/inspect --blas` suggests (core/tensor/blas_kernels.hpp).
# A value the user set is kept. Needs the build (run after scripts/setup.sh).
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -x build/examples/inspect ]; then
  ctrax_blas_core=$(build/examples/inspect --blas 2>/dev/null | sed -n 's/^suggest: OPENBLAS_CORETYPE=//p')
  if [ -n "$ctrax_blas_core" ]; then
    export OPENBLAS_CORETYPE="$ctrax_blas_core"
    echo "blas_env: OpenBLAS does not recognise this CPU; using its $ctrax_blas_core kernels (OPENBLAS_CORETYPE=$ctrax_blas_core)" >&2
  fi
  unset ctrax_blas_core
fi
