/** The disk guard's verdict (src/policy/disk.ts), as the pool refill's activity returns it. Types only. */

export type DiskLevel = 'ok' | 'warn' | 'block' | 'unknown';

export interface DiskPathVerdict {
  path: string;
  role: string;
  level: DiskLevel;
  usedPercent: number | null;
  totalBytes: number | null;
  freeBytes: number | null;
  message: string;
}

export interface DiskVerdict {
  /** The worst level over all paths ('unknown' counts as a warning). */
  level: 'ok' | 'warn' | 'block';
  warnAt: number;
  blockAt: number;
  paths: DiskPathVerdict[];
  /** One line: the blocking paths, else the warnings, else "disk ok". */
  message: string;
  /** The paths the message names; what a change of the verdict is told by (src/policy/conditions.ts). */
  flaggedPaths: string[];
}
