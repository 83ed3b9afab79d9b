#!/usr/bin/env bash
# gVisor's `runsc`: Debian's `runsc` package (gVisor release 2022-12-19) when runsc is not on PATH.
#
#   provision-gvisor.sh                 installs runsc (root with apt) if it is missing
#   provision-gvisor.sh config FILE     also writes FILE, a daemon.json for an engine keeper's provisioning starts
#                                       itself: runsc registered if gVisor can run on this machine, else no runtime
#
# The package ships only /usr/bin/runsc (no maintainer scripts): installing it registers nothing with any Docker
# engine. keeper never changes the configuration of an engine it did not start: `config` is used only by
# scripts/provision-docker.sh for the engine it starts, and the tests register runsc with engines of their own.
#
# The probe runs a sandbox with `--network=none`, which touches no host interface, route or iptables rule (runsc
# with its own network stack would set some up, and is refused on machines whose sandbox denies the root network
# namespace). So runsc is registered without networking: tenant containers under it have loopback only. An
# operator whose host runs gVisor's network stack registers runsc in the engine's own daemon.json instead.
source "$(dirname "$0")/lib.sh"

install_runsc() {
  if command -v runsc >/dev/null 2>&1; then
    say "runsc present: $(command -v runsc) ($(runsc --version 2>/dev/null | head -1))"
    return 0
  fi
  is_root_with_apt || { say "runsc is missing and this is not root with apt: gVisor not installed"; return 1; }
  apt_install runsc
  command -v runsc >/dev/null 2>&1 || die "runsc is still missing after installing Debian's runsc package"
  say "runsc installed: $(command -v runsc) ($(runsc --version 2>/dev/null | head -1))"
}

# Whether gVisor starts a sandbox here: a throwaway state root of its own, removed after.
gvisor_runs() {
  local root out rc
  root=$(mktemp -d)
  out=$(cd "$root" && timeout 60 runsc --root "$root/state" --network=none do true 2>&1) && rc=0 || rc=$?
  rm -rf "$root"
  [ "$rc" = 0 ] || { say "gVisor cannot run a sandbox here: $(printf '%s' "$out" | tail -1)"; return 1; }
}

write_config() {
  local file="$1" runsc
  if install_runsc && gvisor_runs; then
    runsc=$(command -v runsc)
    printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": ["--network=none"]}}}\n' "$runsc" >"$file"
    say "runsc registered for keeper's engine, without networking (tenant containers have loopback only)"
  else
    printf '{}\n' >"$file"
    say "no gVisor for keeper's engine: the development worker runs tenant code under runc, and says so"
  fi
}

case "${1:-}" in
  "") install_runsc || die "need root with apt-get to install runsc" ;;
  config) [ $# -eq 2 ] || die "usage: provision-gvisor.sh [config FILE]"; write_config "$2" ;;
  *) die "usage: provision-gvisor.sh [config FILE]" ;;
esac
