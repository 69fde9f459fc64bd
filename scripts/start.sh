#!/usr/bin/env bash
# The main job on a fresh machine: installs what it needs, then runs edgeq.
# For now this is one broker on 127.0.0.1 (binary protocol on EDGEQ_BROKER_PORT, default 9092,
# data in EDGEQ_DATA_DIR, default ./data); the cell and the gateway grow it in later issues.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ensure.sh
ensure_node_modules
DATA_DIR="${EDGEQ_DATA_DIR:-./data}"
PORT="${EDGEQ_BROKER_PORT:-9092}"
echo "edgeq: starting a broker on 127.0.0.1:${PORT} with data in ${DATA_DIR} (Ctrl-C stops it cleanly)" >&2
echo "edgeq: try  npx edgeq topics create demo --partitions 3  then  npx edgeq produce demo / npx edgeq consume demo --from-beginning" >&2
exec node bin/edgeq.js broker --host 127.0.0.1 --port "${PORT}" --data-dir "${DATA_DIR}" "$@"
