import { describe, expect, it } from 'vitest';
import { judgeDisk, judgePath, usedPercent } from '../../src/policy/disk';

const GB = 1024 ** 3;
const at = (pct: number) => ({ path: '/data', role: 'state DB directory', totalBytes: 100 * GB, freeBytes: (100 - pct) * GB });

describe('disk policy', () => {
  it('computes used percent from total and available bytes', () => {
    expect(usedPercent(100, 25)).toBe(75);
    expect(usedPercent(0, 0)).toBe(0);
  });
  it('is ok below warn, warns at warn, blocks at block (both inclusive)', () => {
    expect(judgePath(at(79.9), 80, 90).level).toBe('ok');
    expect(judgePath(at(80), 80, 90).level).toBe('warn');
    expect(judgePath(at(89.9), 80, 90).level).toBe('warn');
    expect(judgePath(at(90), 80, 90).level).toBe('block');
  });
  it('names the path, its role and the usage in the block message', () => {
    const v = judgePath(at(93.14), 80, 90);
    expect(v.message).toBe('insufficient disk space at /data (state DB directory): 93.1% used, block threshold 90%');
    expect(v.usedPercent).toBe(93.1);
  });
  it('reports a path it could not measure as unknown, which warns but never blocks', () => {
    const v = judgeDisk([{ path: '/gone', role: 'configured path', error: 'does not exist on this machine' }, at(10)], 80, 90);
    expect(v.level).toBe('warn');
    expect(v.paths[0]).toMatchObject({ level: 'unknown', usedPercent: null });
    expect(v.message).toContain('/gone (configured path) is unknown: does not exist on this machine');
  });
  it('takes the worst path and lists only the blocking ones in the message', () => {
    const v = judgeDisk([at(85), { ...at(95), path: '/var/lib/docker', role: 'docker root dir' }], 80, 90);
    expect(v.level).toBe('block');
    expect(v.message).toBe('insufficient disk space at /var/lib/docker (docker root dir): 95.0% used, block threshold 90%');
    expect(judgeDisk([at(5)], 80, 90)).toMatchObject({ level: 'ok', message: 'disk ok' });
  });
});
