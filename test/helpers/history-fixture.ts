/**
 * History fixtures as protobufjs's own toObject/fromObject JSON (longs and bytes as strings, enums by name).
 * Not the CLI's proto3 JSON: the SDK's historyFromJSON fails with the installed protobufjs 8 nested under
 * @temporalio/common ("type must be a Type"), while this round trip uses the History type directly.
 */
import { temporal } from '@temporalio/proto';

type History = temporal.api.history.v1.IHistory;
const HistoryType = temporal.api.history.v1.History;

export function historyToFixture(h: History): object {
  return HistoryType.toObject(HistoryType.fromObject(h), { longs: String, enums: String, bytes: String, defaults: false });
}

export function historyFromFixture(json: object): temporal.api.history.v1.History {
  return HistoryType.fromObject(json);
}
