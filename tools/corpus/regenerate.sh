#!/bin/bash
# Regenerate the per-release test sample (tests/data/corpus/jax-<V>/) from nothing.
#
# Usage: tools/corpus/regenerate.sh OUT [VERSION...]
#   OUT      work directory: OUT/venvs/jax-V (throwaway venvs), OUT/dumps/jax-V/<program>/ (full
#            dumps), OUT/sample/jax-V/<program>/ (the sample)
#   VERSION  jax releases (default: every release with a sample in sample.py)
# Environment:
#   VENVS=DIR     use DIR/jax-V/bin/python when it exists and has jax V (read-only; nothing is
#                 installed there); otherwise a venv is made in OUT/venvs and deleted afterwards
#   KEEP_VENVS=1  keep the venvs made in OUT/venvs
#   PYTHON=python3.11  the interpreter for new venvs (the corpus used Python 3.11). Unset: python3.11
#                 for jax < 0.11, and for jax >= 0.11 (which needs Python >= 3.12) PYTHON312 or
#                 python3.12 or pyenv's newest 3.12.x (~/.pyenv/versions/3.12.*/bin/python)
#   INSTALL=DIR   write the sample into DIR instead of OUT/sample (e.g. tests/data/corpus)
#
# Per release V:
#   $PYTHON -m venv OUT/venvs/jax-V; pip install -r pins/jax-V.txt    (exact pins of the corpus)
#   generators/make_dumps.sh PY OUT/dumps open <program>   for the programs `sample.py --programs V`
#     names (control_flow, spmd; + transformer for 0.8.3, + indexing for 0.6.2), i.e.
#     XLA_FLAGS="--xla_dump_to=OUT/dumps/jax-V/<program>" JAX_PLATFORMS=cpu python gen_<program>.py open
#     (spmd adds --xla_force_host_platform_device_count=8, transformer --xla_dump_hlo_pass_re=.*);
#     make_dumps.sh deletes *.ll and *.o
#     (with RECORD=1: OUT/dumps/jax-V/<program>.compiles.jsonl, jax's memory/cost analysis per compile)
#   sample.py OUT/dumps OUT/sample V   (choice of files, same-length path neutralisation)
#   jax >= 0.11: oracles.py OUT/dumps OUT/sample V --python PY  (jax_analysis.json, xla_parse.json)
# Needs Python 3.11 (3.12 for jax >= 0.11) with venv, PyPI access (or a pip cache) and about 2 minutes and 1 GB per release.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
if [ $# -lt 1 ]; then sed -n '2,25p' "$0"; exit 2; fi
OUT=$(mkdir -p "$1" && cd "$1" && pwd); shift
# the interpreter for a new venv of jax $1: $PYTHON if set, else 3.11 (< 0.11) or 3.12 (>= 0.11)
python_for() {
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  local major minor
  IFS=. read -r major minor _ <<< "$1"
  if [ "$major" -gt 0 ] || [ "$minor" -ge 11 ]; then
    for c in "${PYTHON312:-}" python3.12 $(ls -d "$HOME"/.pyenv/versions/3.12.*/bin/python 2>/dev/null | sort -V -r); do
      [ -n "$c" ] && "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 12))' 2>/dev/null && { echo "$c"; return; }
    done
    echo "python3.12"  # fails visibly below
  else
    for c in python3.11 $(ls -d "$HOME"/.pyenv/versions/3.11.*/bin/python 2>/dev/null | sort -V -r) python3; do
      "$c" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null && { echo "$c"; return; }
    done
    echo python3
  fi
}
VERSIONS=${*:-$(cd "$HERE/pins" && ls jax-*.txt | sed 's/^jax-//; s/\.txt$//' | while read -r v; do
  python3 "$HERE/sample.py" --programs "$v" >/dev/null 2>&1 && echo "$v"; done)}
DEST=${INSTALL:-$OUT/sample}
mkdir -p "$OUT/dumps" "$OUT/logs" "$DEST"
rc=0
for V in $VERSIONS; do
  PROGS=$(python3 "$HERE/sample.py" --programs "$V") || { rc=1; continue; }
  PY=""
  MADE=""
  if [ -n "${VENVS:-}" ] && [ -x "$VENVS/jax-$V/bin/python" ] && \
     "$VENVS/jax-$V/bin/python" -c "import jax, sys; sys.exit(jax.__version__ != '$V')" 2>/dev/null; then
    PY=$VENVS/jax-$V/bin/python
  else
    VENV=$OUT/venvs/jax-$V
    rm -rf "$VENV"
    PYV=$(python_for "$V")
    "$PYV" -m venv "$VENV" || { echo "jax $V: venv with $PYV failed"; rc=1; continue; }
    if ! "$VENV/bin/pip" install -q -r "$HERE/pins/jax-$V.txt" > "$OUT/logs/install-$V.log" 2>&1; then
      echo "jax $V: pip install failed (see $OUT/logs/install-$V.log)"; rc=1; continue
    fi
    PY=$VENV/bin/python
    MADE=$VENV
  fi
  echo "=== jax $V ($PY): $PROGS"
  for p in $PROGS; do
    RECORD=1 "$HERE/generators/make_dumps.sh" "$PY" "$OUT/dumps" open "$p" > "$OUT/logs/gen-$V-$p.log" 2>&1
    if grep -q '^Traceback' "$OUT/logs/gen-$V-$p.log"; then
      echo "jax $V $p: generator crashed (see $OUT/logs/gen-$V-$p.log)"; rc=1
    fi
    grep '^FAILED' "$OUT/logs/gen-$V-$p.log" | sed "s/^/  $p: /"
  done
  python3 "$HERE/sample.py" "$OUT/dumps" "$DEST" "$V" --gen-dir "$HERE/generators" || rc=1
  # jax >= 0.11: jax's memory/cost analysis of every sampled module and XLA's parse, next to the sample
  IFS=. read -r major minor _ <<< "$V"
  if [ "$major" -gt 0 ] || [ "$minor" -ge 11 ]; then
    python3 "$HERE/oracles.py" "$OUT/dumps" "$DEST" "$V" --python "$PY" || rc=1
  fi
  if [ -n "$MADE" ] && [ "${KEEP_VENVS:-0}" != 1 ]; then rm -rf "$MADE"; fi
done
exit $rc
