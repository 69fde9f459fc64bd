#!/usr/bin/env bash
# The main job on a fresh machine: installs what it needs, then runs the local deployment
# (`edgeq dev`): the embedded arbiter and a cell of 3 brokers as separate processes on 127.0.0.1,
# supervised. EDGEQ_DATA_DIR (default ./data) and EDGEQ_BROKER_PORT (default 9092: brokers on
# 9092-9094) change where; Ctrl-C stops everything cleanly.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure.sh
ensure_node_modules
# The bundle every edgeq process runs (bin/edgeq.js falls back to the sources if it is stale).
node scripts/build.mjs
exec node bin/edgeq.js dev "$@"
