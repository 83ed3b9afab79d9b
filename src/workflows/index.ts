/** The workflow bundle's entry point: every workflow type keeper registers. */
export { hostHealth } from './hostHealth';
export { reconcileTick } from './reconcileTick';
export { circuitBreaker } from './circuitBreaker';
