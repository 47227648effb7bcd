#!/usr/bin/env bash
# Runs every cargo-fuzz target for a fixed time (default 60 s each) and fails on any crash.
#   fuzz/run-bounded.sh                  # 60 s per target, 5 targets
#   FUZZ_SECONDS=10 fuzz/run-bounded.sh
# Needs the nightly toolchain (libFuzzer's sanitizer flags) and cargo-fuzz, which it
# installs from crates.io when missing. Without nightly it says so and exits 2, or 0 when
# FUZZ_OPTIONAL=1 (for a CI that has only stable).
# Cost on 2 cores: the first build of the instrumented targets takes ~8 min (16 min with
# one job and other builds running); then 5 x FUZZ_SECONDS.
set -euo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-60}"
targets=(frame_decoder protocol_decode form_validate check_answer relay)

if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "fuzz: no nightly toolchain (cargo-fuzz needs it); property tests still run in cargo test" >&2
    [ "${FUZZ_OPTIONAL:-0}" = 1 ] && exit 0
    exit 2
fi
command -v cargo-fuzz >/dev/null 2>&1 || cargo install --locked cargo-fuzz

cargo +nightly fuzz build
for target in "${targets[@]}"; do
    # corpus/ collects what the fuzzer finds (not committed); seeds/ are small valid inputs
    # that get it past the JSON syntax quickly.
    mkdir -p "corpus/$target" "seeds/$target"
    echo "fuzz: $target for ${seconds}s"
    cargo +nightly fuzz run "$target" "corpus/$target" "seeds/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
echo "fuzz: no crash in ${#targets[@]} targets x ${seconds}s"
