/**
 * keeper's crash records over --crash-record-max-per-service (newest kept, count pass first) or older than
 * --crash-record-max-age. DB only: the engine being down does not stop this class. The look does not ask for a
 * sweep for it: the schedule's sweeps trim the table.
 */
import { deleteCrashRecord, listCrashRecordAges } from '../../../db/crash-records';
import { planCrashRecords } from '../../../policy/gc';
import { unixSeconds } from '../../../time';
import { gcClass } from '../class';

export const crashRecords = gcClass({
  name: 'crashRecords',
  words: 'old crash records',
  lookRequests: false,
  observe: ({ db }) => ({ rows: listCrashRecordAges(db) }),
  plan: (seen, { settings, clock }) =>
    planCrashRecords(seen.rows, {
      now: unixSeconds(clock),
      maxPerService: settings.crashRecordMaxPerService,
      maxAgeSeconds: Math.floor(settings.crashRecordMaxAgeMs / 1000),
    }),
  remove: (r, { db }) => deleteCrashRecord(db, r.id),
});
