#!/usr/bin/env bash
# Provisions everything the tests need: Docker engine, test image, Temporal CLI, time-skipping test server,
# Chromium for the UI test, the real Temporal server with PostgreSQL and openssl for the cluster tests,
# Prometheus with promtool for the metrics tests, gVisor's runsc for the tenant-runtime tests, and systemd-analyze
# with a C++ toolchain for the packaging tests, and Debian's docker-registry for the template-pull tests.
source "$(dirname "$0")/lib.sh"
here="$(dirname "$0")"
bash "$here/provision-docker.sh"
bash "$here/provision-test-image.sh"
bash "$here/provision-temporal-cli.sh"
bash "$here/provision-test-server.sh"
bash "$here/provision-temporal-server.sh"
bash "$here/provision-chromium.sh"
bash "$here/provision-prometheus.sh"
bash "$here/provision-gvisor.sh"
bash "$here/provision-packaging.sh"
bash "$here/provision-registry.sh"
