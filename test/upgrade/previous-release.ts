/**
 * The release before this one, which test/upgrade/ upgrades from. The project has no tags: this is the commit on
 * main that was last released. When a release lands, record its commit here (docs/upgrade.md, "Releasing").
 */
export const PREVIOUS_RELEASE = { commit: '05d66d177b7d37365453539f4f1daf3b04d3014f', version: '0.1.0' };
