#!/usr/bin/env node
'use strict';
// The `keeper` bin: runs the compiled CLI (npm install builds it through the prepare script).
const path = require('node:path');
const fs = require('node:fs');
const cli = path.join(__dirname, '..', 'dist', 'cli.js');
if (!fs.existsSync(cli)) {
  process.stderr.write('keeper: not built yet; run `npm run build` (npm install does it)\n');
  process.exit(1);
}
require(cli).main().then((code) => process.exit(code));
