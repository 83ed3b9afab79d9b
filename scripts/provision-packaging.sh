#!/usr/bin/env bash
# What the packaging tests need (test/install/): `systemd-analyze` from Debian's systemd package, to verify
# deploy/systemd/keeper.service offline (systemd need not be PID 1: nothing is started through it), and a C++
# toolchain, with which `npm install -g` of keeper's tarball compiles better-sqlite3 when no prebuilt binary fits.
source "$(dirname "$0")/lib.sh"

missing=()
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
say "$(systemd-analyze --version | head -1); $(g++ --version | head -1)"
