/** `keeper crashes`: a service's recent deaths, as the reconciler recorded them (keeper_crash_records). */
import { listCrashRecords, type CrashRecordRow } from '../db/crash-records';

export type { CrashRecordRow };
import { readService } from '../db/service-lifecycle';
import type { HostDeps } from './deps';
import { ServiceCommandError } from './services';

export interface ServiceCrashes {
  serviceId: string;
  /** Newest first. */
  deaths: CrashRecordRow[];
}

/** The service's last `limit` deaths. A removed service's records stay readable until GC's retention drops them. */
export function serviceCrashes({ db }: Pick<HostDeps, 'db'>, serviceId: string, limit: number): ServiceCrashes {
  const deaths = listCrashRecords(db, serviceId, limit);
  if (deaths.length === 0 && !readService(db, serviceId))
    throw new ServiceCommandError(`no service ${serviceId}, and no crash recorded for it`);
  return { serviceId, deaths };
}
