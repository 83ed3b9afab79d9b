# Shared helpers for the provisioning scripts. Sourced, never run.
set -euo pipefail

KEEPER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS_DIR="${KEEPER_TOOLS_DIR:-$KEEPER_ROOT/.tools}"
mkdir -p "$TOOLS_DIR/bin"

say() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*"; }
die() { printf '[%s] error: %s\n' "$(basename "$0" .sh)" "$*" >&2; exit 1; }
is_root_with_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; }

apt_install() {
  is_root_with_apt || die "need root with apt-get to install: $*"
  if [ ! -f "$TOOLS_DIR/.apt-updated" ]; then
    say "apt-get update"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null || die "apt-get update failed"
    touch "$TOOLS_DIR/.apt-updated"
  fi
  say "apt-get install $*"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null \
    || die "apt-get install $* failed"
}

# Waits up to $2 seconds for command $1 to succeed.
wait_for() {
  local check="$1" seconds="$2" i
  for ((i = 0; i < seconds * 10; i++)); do
    if eval "$check" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  return 1
}
