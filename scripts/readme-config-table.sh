#!/usr/bin/env bash
# Rewrites README.md's configuration table from the settings module (test/readme.test.ts checks it is current).
set -euo pipefail
cd "$(dirname "$0")/.."
table=$(npx tsx src/cli/config-table.ts)
TABLE="$table" python3 - <<'PY'
import os, re
text = open('README.md').read()
start = text.index('<!-- config-table:start')
start = text.index('-->', start) + 3
end = text.index('<!-- config-table:end -->')
open('README.md', 'w').write(text[:start] + '\n' + os.environ['TABLE'] + '\n' + text[end:])
PY
