#!/usr/bin/env bash
# Makes sure `prometheus` and `promtool` are on PATH: the metrics tests run a real Prometheus against a real
# keeper worker and check the shipped rules with promtool. Installs Debian's `prometheus` package (2.42, with
# promtool) when either is missing.
#
# Debian's package starts its daemon from postinst (invoke-rc.d). The tests start their own Prometheus with
# their own config, so the install must leave nothing running: a policy-rc.d that forbids every start is in
# place for the install (unless the machine already has one), and any daemon that started anyway is stopped.
source "$(dirname "$0")/lib.sh"

have_both() { command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; }

if have_both; then
  say "$(prometheus --version 2>&1 | head -1)"
  exit 0
fi

policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ] && is_root_with_apt; then
  printf '#!/bin/sh\n# keeper provision-prometheus.sh: no service starts during the install\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT # also when apt_install dies
fi
# --no-install-recommends (in apt_install) also keeps prometheus-node-exporter and its daemon out.
apt_install prometheus

# Belt and braces: a daemon the package started anyway is stopped through its own init script (its pid file).
if pgrep -u prometheus -x prometheus >/dev/null 2>&1 && [ -x /etc/init.d/prometheus ]; then
  say "stopping the prometheus daemon the package started"
  /etc/init.d/prometheus stop >/dev/null || true
  wait_for '! pgrep -u prometheus -x prometheus' 10 || die "the package's prometheus daemon did not stop"
fi
have_both || die "prometheus or promtool is still missing after installing Debian's prometheus package"
say "$(prometheus --version 2>&1 | head -1)"
