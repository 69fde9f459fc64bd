# Helpers sourced by the top-level scripts: install what a fresh machine lacks, once.

# Installs npm dependencies from the lockfile when node_modules is missing or older than it.
ensure_node_modules() {
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "edgeq: installing npm dependencies (npm ci)" >&2
    npm ci --no-audit --no-fund >&2
  fi
}

# ensure_apt_package <command> <package>...: installs the Debian packages when the command is missing.
ensure_apt_package() {
  local cmd="$1"
  shift
  if command -v "$cmd" >/dev/null 2>&1 || [ -x "/usr/bin/$cmd" ] || [ -x "/usr/sbin/$cmd" ]; then
    return 0
  fi
  echo "edgeq: installing $* (apt-get)" >&2
  local sudo=""
  if [ "$(id -u)" != "0" ]; then sudo="sudo"; fi
  $sudo apt-get update -qq >&2 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >&2
}
