#!/usr/bin/env bash
# What the template-pull tests need (test/pool/pull.test.ts): Debian's `docker-registry` (the CNCF distribution
# registry), which each test starts itself on loopback, inside its own engine's network namespace, with a temp
# storage dir and config, and stops again. The package's own service is never started here.
source "$(dirname "$0")/lib.sh"

command -v docker-registry >/dev/null 2>&1 || apt_install docker-registry
say "$(docker-registry --version 2>&1 | head -1)"
