/**
 * The ids a log line written inside an activity carries, so it leads to its run in the UI: the SDK's own
 * activity log attributes, without the task token (long, and no use to an operator) and what every line of a
 * host shares anyway (namespace, task queue).
 */
import { Context } from '@temporalio/activity';
import { activityLogAttributes } from '@temporalio/worker';
import type { Fields } from '../log';

export function activityLogContext(): Fields {
  let info: Context['info'];
  try {
    info = Context.current().info;
  } catch {
    return {}; // not inside an activity
  }
  const { taskToken: _token, namespace: _namespace, taskQueue: _queue, isLocal: _local, ...ids } = activityLogAttributes(info);
  return ids;
}
