/** keeper's version: package.json's, read when asked, so a release changes it in one place. */
import fs from 'node:fs';
import path from 'node:path';

let cached: string | undefined;

/** src/ and dist/ both sit next to package.json. */
export function keeperVersion(): string {
  cached ??= (JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version;
  return cached;
}
