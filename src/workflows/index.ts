/** The workflow bundle's entry point: every workflow type keeper registers. */
export { hostHealth } from './hostHealth';
export { circuitBreaker } from './circuitBreaker';
export { gcSweep } from './gcSweep';
export { poolRefill } from './poolRefill';
export { reconcileTick } from './reconcileTick';
export { reconcileOnEvents } from './reconcileOnEvents';
export { notifyOperators } from './notifyOperators';
