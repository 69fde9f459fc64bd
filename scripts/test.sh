#!/usr/bin/env bash
# The whole test suite, on a fresh machine: installs what it needs, typechecks, runs every test.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure.sh
ensure_node_modules
# The bundle every edgeq process runs (bin/edgeq.js falls back to the sources if it is stale).
node scripts/build.mjs
# Real etcd for the arbiter's contract and quorum tests (Debian's package starts no service).
ensure_apt_package etcd etcd-server etcd-client
# Debian's chromium for the dashboard's browser test (playwright-core drives it; no browser download).
ensure_apt_package chromium chromium
# promtool, which the HTTP conformance test runs over every process's /metrics: Debian ships it
# only in the prometheus package, which also enables a Prometheus server (:9090) where systemd
# runs; the tests need only the tool, so a server installed here is stopped and disabled again.
if ! command -v promtool >/dev/null 2>&1; then
  ensure_apt_package promtool prometheus
  if [ -d /run/systemd/system ]; then
    $([ "$(id -u)" != "0" ] && echo sudo) systemctl disable --now prometheus >&2 || true
  fi
fi
echo "edgeq: typecheck" >&2
npx tsc --noEmit -p tsconfig.json
# The dashboard's page and its browser test see the DOM's types, the rest of the code does not.
npx tsc --noEmit -p src/dashboard/page/tsconfig.json
npx tsc --noEmit -p test/dashboard/tsconfig.json
echo "edgeq: tests" >&2
npx vitest run "$@"
