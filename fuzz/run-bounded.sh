#!/usr/bin/env bash
# Runs every cargo-fuzz target for a fixed time (default 60 s each) and fails on any crash.
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
#   fuzz/run-bounded.sh            # 60 s per target
#   FUZZ_SECONDS=10 fuzz/run-bounded.sh
set -euo pipefail
cd "$(dirname "$0")"
seconds="${FUZZ_SECONDS:-60}"
targets=(frame_decoder protocol_decode form_validate check_answer relay)
cargo +nightly fuzz build
for target in "${targets[@]}"; do
    mkdir -p "corpus/$target"
    echo "fuzz: $target for ${seconds}s"
    cargo +nightly fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
echo "fuzz: no crash in ${#targets[@]} targets x ${seconds}s"
