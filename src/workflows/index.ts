/** The workflow bundle's entry point: every workflow type keeper registers. */
export { hostHealth } from './hostHealth';
export { poolRefill } from './poolRefill';
export { gcSweep } from './gcSweep';
