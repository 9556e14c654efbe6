#!/usr/bin/env bash
# CI smoke run of every fuzz target: SECONDS (default 30) each, seeded from fuzz/seeds.
# Needs a nightly toolchain (or RUSTC_BOOTSTRAP=1) and `cargo install cargo-fuzz`.
# A crash leaves its input in fuzz/artifacts/<target>/ and fails the script.
set -euo pipefail
cd "$(dirname "$0")"
SECONDS_PER_TARGET="${1:-30}"
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
for target in buffer_assignment hlo files read hlo_proto; do
    corpus="$(mktemp -d)"
    echo "== $target (${SECONDS_PER_TARGET}s)"
    # the fuzzer's exit status, not grep's nor that of a `|| true` (issue 50: `status` read after
    # `|| true` was always 0 and hid a panic): errexit off for the pipeline, PIPESTATUS read first
    set +e
    cargo $TOOLCHAIN fuzz run "$target" "$corpus" "seeds/$target" -- \
        -max_total_time="$SECONDS_PER_TARGET" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 2>&1 | grep -E "^stat::number_of_executed_units|Done|ERROR|panicked|SUMMARY"
    status=${PIPESTATUS[0]}
    set -e
    rm -rf "$corpus"
    if [ "$status" -ne 0 ]; then
        echo "fuzz target $target failed (exit $status); see fuzz/artifacts/$target/" >&2
        exit "$status"
    fi
done
echo "fuzz smoke: all targets ran ${SECONDS_PER_TARGET}s without a crash"
