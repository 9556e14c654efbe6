#!/usr/bin/env bash
# CI smoke run of every fuzz target: SECONDS (default 30) each, seeded from fuzz/seeds.
# Needs a nightly toolchain (or RUSTC_BOOTSTRAP=1) and `cargo install cargo-fuzz`.
# Fails (exit status not 0) when a target crashes (a panic, an overflow: the targets are built
# with overflow checks, fuzz/Cargo.toml), times out on one input (-timeout), runs out of memory
# (-rss_limit_mb / -malloc_limit_mb), hangs past its time (the whole run is bounded by
# SECONDS + FUZZ_SMOKE_GRACE, default 300 s), or ran no input at all. A crash leaves its input in
# fuzz/artifacts/<target>/; keep it as a seed (fuzz/seeds/<target>/) once fixed.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET="${1:-30}"
GRACE="${FUZZ_SMOKE_GRACE:-300}"
TARGETS="${FUZZ_SMOKE_TARGETS:-buffer_assignment hlo files read hlo_proto}"
# libFuzzer's sanitizer flags need nightly; without a nightly toolchain, let stable act as one.
if [ -z "${FUZZ_TOOLCHAIN+x}" ]; then
    if rustup toolchain list 2>/dev/null | grep -q '^nightly'; then FUZZ_TOOLCHAIN=+nightly
    else FUZZ_TOOLCHAIN=""; export RUSTC_BOOTSTRAP=1; fi
fi
TOOLCHAIN="$FUZZ_TOOLCHAIN"
# Build every target first, saying so: the first build takes minutes and prints nothing with -q.
echo "== building the fuzz targets (cargo fuzz build: 2-4 min the first time, seconds after)"
build_start=$SECONDS
cargo $TOOLCHAIN fuzz build
echo "== built in $((SECONDS - build_start)) s"
log="$(mktemp)"
corpus=""
trap 'rm -rf "$log" ${corpus:+"$corpus"}' EXIT
fail() {
    echo "fuzz target $1 failed: $2; see fuzz/artifacts/$1/" >&2
    exit 1
}
for target in $TARGETS; do
    corpus="$(mktemp -d)"
    echo "== $target (${SECONDS_PER_TARGET}s)"
    # The fuzzer's own exit status (issue 50: it was read after `|| true`, always 0, and hid a
    # panic), its output (a crash, timeout or OOM report fails even with status 0), and a bound on
    # the whole run (a hang libFuzzer's -timeout does not catch).
    set +e
    timeout --kill-after=10 "$((SECONDS_PER_TARGET + GRACE))" \
        cargo $TOOLCHAIN fuzz run "$target" "$corpus" "seeds/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 >"$log" 2>&1
    status=$?
    set -e
    rm -rf "$corpus"
    grep -E "^stat::number_of_executed_units|Done|ERROR|panicked|SUMMARY|deadly signal|out-of-memory" "$log" || true
    case "$status" in
        0) ;;
        124|137) fail "$target" "still running after $((SECONDS_PER_TARGET + GRACE)) s (a hang; killed)" ;;
        *) tail -n 40 "$log" >&2; fail "$target" "exit status $status" ;;
    esac
    if grep -qE "ERROR: libFuzzer|SUMMARY: libFuzzer|panicked at|deadly signal|out-of-memory|AddressSanitizer" "$log"; then
        tail -n 40 "$log" >&2
        fail "$target" "a crash, timeout or out-of-memory report in its output (exit status 0)"
    fi
    runs="$(sed -n 's/^stat::number_of_executed_units: *\([0-9][0-9]*\).*/\1/p' "$log" | tail -n 1)"
    if [ -z "$runs" ] || [ "$runs" -eq 0 ]; then
        tail -n 40 "$log" >&2
        fail "$target" "it ran no input (no 'stat::number_of_executed_units' above 0)"
    fi
done
echo "fuzz smoke: all targets ran ${SECONDS_PER_TARGET}s without a crash, timeout or out-of-memory"
