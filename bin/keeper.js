#!/usr/bin/env node
'use strict';
// The `keeper` bin: runs the compiled CLI. A checkout builds it on npm install (prepare); the packed tarball
// (npm pack) carries it prebuilt, so installing that needs no TypeScript.
const path = require('node:path');
const fs = require('node:fs');
const cli = path.join(__dirname, '..', 'dist', 'cli.js');
if (!fs.existsSync(cli)) {
  process.stderr.write('keeper: not built yet; run `npm run build` in the checkout\n');
  process.exit(1);
}
require(cli)
  .main()
  .then((code) => process.exit(code));
