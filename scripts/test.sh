#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what it needs, typechecks, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure.sh
ensure_node_modules
echo "edgeq: typecheck" >&2
npx tsc --noEmit -p tsconfig.json
echo "edgeq: tests" >&2
npx vitest run "$@"
