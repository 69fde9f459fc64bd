#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what it needs, typechecks, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure.sh
ensure_node_modules
# Real etcd for the arbiter's contract and quorum tests (Debian's package starts no service).
ensure_apt_package etcd etcd-server etcd-client
echo "edgeq: typecheck" >&2
npx tsc --noEmit -p tsconfig.json
echo "edgeq: tests" >&2
npx vitest run "$@"
