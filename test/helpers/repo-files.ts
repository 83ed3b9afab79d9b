/** The repository's own files, for the tests that read them (layering, declared packages, names the docs cite). */
import fs from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..', '..');

/** Folders that hold no source of the project's own: installed, built, provisioned or left by a run. */
const NOT_SOURCES = new Set(['node_modules', 'dist', 'coverage', 'data']);

/** Every file under `dir` (relative to the repository) whose name ends in one of `exts`, as relative paths. */
export function files(dir: string, exts: string | string[] = '.ts'): string[] {
  const endings = typeof exts === 'string' ? [exts] : exts;
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return NOT_SOURCES.has(e.name) || e.name.startsWith('.') ? [] : files(rel, endings);
    return endings.some((x) => rel.endsWith(x)) ? [rel] : [];
  });
}

export const read = (rel: string): string => fs.readFileSync(path.join(ROOT, rel), 'utf8');
