import { describe, expect, it } from 'vitest';
import {
  BRIDGE_ICC_OPTION,
  hasRoom,
  planRefill,
  POOL_NETWORK_OPTIONS,
  poolNetworkIsolates,
  resolvePooledTemplates,
} from '../../src/policy/pool';

const TEMPLATES = [
  { id: 'tmpl_default', name: 'default' },
  { id: 'tmpl_node', name: 'node' },
  { id: 'tmpl_python', name: 'python' },
  { id: 'tmpl_go', name: 'go' },
];

describe('resolvePooledTemplates', () => {
  it('resolves ids and names in the order of the setting, once each, and reports unknown entries', () => {
    const r = resolvePooledTemplates(['python', 'tmpl_default', 'default', 'cobol'], TEMPLATES);
    expect(r.pooled.map((t) => t.id)).toEqual(['tmpl_python', 'tmpl_default']);
    expect(r.unknown).toEqual(['cobol']);
  });
  it('prefers an id over a name, as ah does', () => {
    const r = resolvePooledTemplates(
      ['x'],
      [
        { id: 'y', name: 'x' },
        { id: 'x', name: 'z' },
      ],
    );
    expect(r.pooled.map((t) => t.id)).toEqual(['x']);
  });
});

describe('planRefill', () => {
  const pooled = ['tmpl_default', 'tmpl_node', 'tmpl_python'];
  it('fills an empty pool to 2/2/2 under a total of 6', () => {
    expect(planRefill({ pooled, ready: {}, size: 2, maxTotal: 6 })).toEqual([
      { templateId: 'tmpl_default', count: 2 },
      { templateId: 'tmpl_node', count: 2 },
      { templateId: 'tmpl_python', count: 2 },
    ]);
  });
  it('stops at the max total, in priority order', () => {
    expect(planRefill({ pooled, ready: {}, size: 5, maxTotal: 3 })).toEqual([{ templateId: 'tmpl_default', count: 3 }]);
    expect(planRefill({ pooled, ready: {}, size: 2, maxTotal: 5 })).toEqual([
      { templateId: 'tmpl_default', count: 2 },
      { templateId: 'tmpl_node', count: 2 },
      { templateId: 'tmpl_python', count: 1 },
    ]);
  });
  it('tops up only what is missing, and counts ready rows of unpooled templates towards the total', () => {
    expect(planRefill({ pooled, ready: { tmpl_default: 2, tmpl_node: 1 }, size: 2, maxTotal: 6 })).toEqual([
      { templateId: 'tmpl_node', count: 1 },
      { templateId: 'tmpl_python', count: 2 },
    ]);
    expect(planRefill({ pooled, ready: { tmpl_go: 5 }, size: 2, maxTotal: 6 })).toEqual([{ templateId: 'tmpl_default', count: 1 }]);
  });
  it('plans nothing when full, when over-full, or when size or total is 0', () => {
    expect(planRefill({ pooled, ready: { tmpl_default: 2, tmpl_node: 2, tmpl_python: 2 }, size: 2, maxTotal: 6 })).toEqual([]);
    expect(planRefill({ pooled, ready: { tmpl_default: 9 }, size: 2, maxTotal: 6 })).toEqual([]);
    expect(planRefill({ pooled, ready: {}, size: 0, maxTotal: 6 })).toEqual([]);
    expect(planRefill({ pooled, ready: {}, size: 2, maxTotal: 0 })).toEqual([]);
  });
});

describe('hasRoom', () => {
  it('needs room both in the template and in the total', () => {
    expect(hasRoom('a', { a: 1 }, 2, 6)).toBe(true);
    expect(hasRoom('a', { a: 2 }, 2, 6)).toBe(false);
    expect(hasRoom('a', { b: 6 }, 2, 6)).toBe(false);
  });
});

describe('poolNetworkIsolates', () => {
  const icc = (v?: string): Record<string, string> => (v === undefined ? {} : { [BRIDGE_ICC_OPTION]: v });
  it('trusts only an internal network with inter-container traffic off', () => {
    expect(poolNetworkIsolates({ internal: true, options: icc('false') })).toBe(true);
    expect(poolNetworkIsolates({ internal: false, options: icc('false') })).toBe(false);
    expect(poolNetworkIsolates({ internal: true, options: icc('true') })).toBe(false);
    expect(poolNetworkIsolates({ internal: true, options: icc() })).toBe(false);
  });
  it('is what keeper creates ah-pool with', () => {
    expect(poolNetworkIsolates({ internal: true, options: POOL_NETWORK_OPTIONS })).toBe(true);
  });
});
