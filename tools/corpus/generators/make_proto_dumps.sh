#!/bin/bash
# Dump the generator programs as HLO text AND binary protos of the same compile (issue 38).
#
# Usage: make_proto_dumps.sh PYTHON OUTROOT VARIANT [PROGRAM...]
#   dumps go to OUTROOT/jax-<jax version>/<program>/ with
#   XLA_FLAGS="--xla_dump_to=DIR --xla_dump_hlo_as_text --xla_dump_hlo_as_proto"
#   (spmd adds --xla_force_host_platform_device_count=8). No per-pass dumps unless EXTRA_FLAGS
#   says so; EXTRA_FLAGS is appended as it is (e.g. "--xla_dump_hlo_pass_re=.*" or
#   "--xla_dump_hlo_to_subfolder"), SUFFIX names the folder OUTROOT/jax-V/<program><SUFFIX>.
#   PROGRAM: any of transformer control_flow convnet indexing linalg spmd misc big_model
#   (default: all eight). *.ll and *.o are deleted afterwards. RECORD=1 as in make_dumps.sh.
set -u
PY=$1; OUTROOT=$2; VAR=$3; shift 3
PROGS=${*:-"big_model control_flow convnet indexing linalg misc spmd transformer"}
HERE=$(cd "$(dirname "$0")" && pwd)
V=$("$PY" -c 'import jax; print(jax.__version__)')
for p in $PROGS; do
  OUT="$OUTROOT/jax-$V/$p${SUFFIX:-}"
  rm -rf "$OUT"; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
  FLAGS="--xla_dump_to=$OUT --xla_dump_hlo_as_text --xla_dump_hlo_as_proto ${EXTRA_FLAGS:-}"
  [ "$p" = spmd ] && FLAGS="$FLAGS --xla_force_host_platform_device_count=8"
  echo "== jax $V $p: XLA_FLAGS=\"$FLAGS\" python gen_$p.py $VAR"
  if [ "${RECORD:-0}" = 1 ]; then
    ( cd "$HERE" && COMPILES="$OUT.compiles.jsonl" PYTHONPATH="$HERE/record_compiles${PYTHONPATH:+:$PYTHONPATH}" \
      XLA_FLAGS="$FLAGS" JAX_PLATFORMS=cpu "$PY" "gen_$p.py" "$VAR" )
  else
    ( cd "$HERE" && XLA_FLAGS="$FLAGS" JAX_PLATFORMS=cpu "$PY" "gen_$p.py" "$VAR" )
  fi
  find "$OUT" \( -name '*.ll' -o -name '*.o' \) -delete
done
