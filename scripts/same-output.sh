#!/usr/bin/env bash
# Converts every fixture with the binary of git revision BASE (default: main)
# and with the working tree's, and compares the traces byte for byte: a change
# that should not alter any trace (a refactoring) shows it does not.
#
#   scripts/same-output.sh [BASE]
#
# Needs ../shared/fixtures. Exits 1 if any trace differs.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-main}
fixtures=../shared/fixtures
[ -d "$fixtures" ] || { echo "same-output: $fixtures is absent" >&2; exit 2; }

work=$(mktemp -d)
trap 'git worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

git worktree add --quiet --detach "$work/base" "$base"
# The base builds into a target directory of its own beside this one's, so
# that switching between the two does not rebuild either from scratch.
CARGO_TARGET_DIR=target/same-output-base cargo build --quiet --release \
  --manifest-path "$work/base/Cargo.toml"
cargo build --quiet --release
old=target/same-output-base/release/nsys2perfetto
new=target/release/nsys2perfetto

differ=0
count=0
for input in "$fixtures"/sqlite/*.sqlite "$fixtures"/local/*.sqlite demo/demo.sqlite; do
  name=$(basename "$input" .sqlite)
  "$old" convert -q "$input" -o "$work/$name.old.perfetto-trace"
  "$new" convert -q "$input" -o "$work/$name.new.perfetto-trace"
  count=$((count + 1))
  if ! cmp -s "$work/$name.old.perfetto-trace" "$work/$name.new.perfetto-trace"; then
    echo "differs: $input"
    differ=$((differ + 1))
  fi
done
echo "$count traces compared with $base ($(git rev-parse --short "$base")): $differ differ"
[ "$differ" -eq 0 ]
