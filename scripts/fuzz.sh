#!/usr/bin/env bash
# Coverage-guided fuzzing of every decoder and parser (fuzz/, cargo-fuzz on
# libFuzzer):
#
#   scripts/fuzz.sh [TARGET|all] [SECONDS]      default: all, 20 s each
#
# Installs the pinned cargo-fuzz into target/tools/ when missing, writes
# the seed corpora (fuzz/corpus/<target>/, generated
# from the fixtures and datagen by `fuzz/src/seeds.rs`, never committed;
# inputs libFuzzer adds there are kept between runs), builds and runs each target
# for SECONDS with -rss_limit_mb (FUZZ_RSS_MB, default 2048) and a per-input
# -timeout (FUZZ_TIMEOUT, default 10 s). Any crash, OOM or timeout fails the
# run; libFuzzer's reproducer is printed (path and hex) and kept under
# fuzz/artifacts/<target>/; `cargo fuzz run <target> <file>` replays it.
# RUSTC_BOOTSTRAP=1 lets cargo-fuzz's nightly flags run on the pinned
# stable toolchain. FUZZ_SANITIZER (default address) is passed to
# `cargo fuzz --sanitizer`; `none` builds faster (CI) and still catches
# panics, aborts, OOMs and timeouts. FUZZ_JOBS (default 1) runs that many
# targets at once.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
CARGO_FUZZ_VERSION=0.13.2
TARGETS=(cbor car frame segment dispatch json_text syntax)
target=${1:-all}
seconds=${2:-20}
rss=${FUZZ_RSS_MB:-2048}
timeout=${FUZZ_TIMEOUT:-10}
sanitizer=${FUZZ_SANITIZER:-address}
jobs=${FUZZ_JOBS:-1}
export RUSTC_BOOTSTRAP=1

if [[ "$target" == "all" ]]; then
    selected=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
    selected=("$target")
else
    echo "fuzz.sh: unknown target $target (one of: ${TARGETS[*]}, all)" >&2
    exit 2
fi

tools="$ROOT/target/tools"
if ! "$tools/bin/cargo-fuzz" --version 2>/dev/null | grep -q "$CARGO_FUZZ_VERSION"; then
    echo "fuzz.sh: installing cargo-fuzz $CARGO_FUZZ_VERSION into target/tools" >&2
    cargo install cargo-fuzz --version "=$CARGO_FUZZ_VERSION" --locked --root "$tools"
fi
export PATH="$tools/bin:$PATH"

cd fuzz
echo "fuzz.sh: seed corpora" >&2
# The generator is an ordinary binary (debug build, no fuzzing flags: with
# no sanitizer its coverage hooks would have nothing to link against).
cargo run --quiet --bin seeds
echo "fuzz.sh: building ${selected[*]} (sanitizer $sanitizer)" >&2
for t in "${selected[@]}"; do
    cargo fuzz build --sanitizer "$sanitizer" "$t"
done

run_one() {
    local t=$1 log="$ROOT/target/fuzz-logs/$1.log"
    mkdir -p "$ROOT/target/fuzz-logs" "artifacts/$t"
    if cargo fuzz run --sanitizer "$sanitizer" "$t" "corpus/$t" -- \
        -max_total_time="$seconds" -rss_limit_mb="$rss" -timeout="$timeout" \
        -print_final_stats=1 >"$log" 2>&1; then
        local execs
        execs=$(grep -m1 'stat::number_of_executed_units' "$log" | awk '{print $2}')
        echo "fuzz.sh: $t: ${execs:-?} executions in ${seconds}s, no crash"
    else
        echo "fuzz.sh: $t: FAILED (log $log)"
        grep -E 'ERROR|panicked|Test unit written|out-of-memory|timeout' "$log" | head -20
        local artifact
        artifact=$(grep -o 'Test unit written to [^ ]*' "$log" | tail -1 | awk '{print $5}')
        if [[ -n "$artifact" && -f "$artifact" ]]; then
            echo "fuzz.sh: reproducer fuzz/$artifact ($(wc -c <"$artifact") bytes):"
            od -An -tx1 -v "$artifact" | head -20
        fi
        return 1
    fi
}

failed=0
running=0
pids=()
for t in "${selected[@]}"; do
    run_one "$t" &
    pids+=($!)
    running=$((running + 1))
    if ((running >= jobs)); then
        wait "${pids[0]}" || failed=1
        pids=("${pids[@]:1}")
        running=$((running - 1))
    fi
done
for p in "${pids[@]}"; do
    wait "$p" || failed=1
done
exit $failed
