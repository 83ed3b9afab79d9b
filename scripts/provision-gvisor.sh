#!/usr/bin/env bash
# gVisor's `runsc` for the tenant-runtime tests (test/gvisor/): Debian's `runsc` package (gVisor release
# 2022-12-19) when runsc is not on PATH.
#
# The package ships only /usr/bin/runsc (no maintainer scripts): installing it registers nothing with any Docker
# engine. The tests register runsc with an engine of their own (scripts/extra-dockerd.sh start NAME DAEMON_JSON);
# keeper itself never changes an engine's configuration, so the host's engine is left exactly as it was.
source "$(dirname "$0")/lib.sh"

if command -v runsc >/dev/null 2>&1; then
  say "runsc present: $(command -v runsc) ($(runsc --version 2>/dev/null | head -1))"
  exit 0
fi
apt_install runsc
command -v runsc >/dev/null 2>&1 || die "runsc is still missing after installing Debian's runsc package"
say "runsc installed: $(command -v runsc) ($(runsc --version 2>/dev/null | head -1))"
