#!/usr/bin/env bash
# Debian's Chromium for the Temporal UI end-to-end test (driven by playwright-core; no browser download).
source "$(dirname "$0")/lib.sh"
for candidate in "${KEEPER_CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser; do
  if [ -n "$candidate" ] && [ -x "$candidate" ]; then
    say "chromium present: $candidate"
    exit 0
  fi
done
apt_install chromium fonts-dejavu-core
[ -x /usr/bin/chromium ] || die "chromium did not install"
say "chromium installed"
