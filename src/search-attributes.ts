/**
 * keeper's search attributes: they let the Temporal UI and visibility queries filter runs by host
 * (`KeeperHost="h1"`) and by service (`ServiceId="svc1"`). Every server keeper uses must have them registered;
 * workflow code imports this module, so it stays deterministic.
 */
import { defineSearchAttributeKey, type SearchAttributePair } from '@temporalio/common';

export const KeeperHost = defineSearchAttributeKey('KeeperHost', 'KEYWORD');
export const ServiceId = defineSearchAttributeKey('ServiceId', 'KEYWORD');

/** All of them, for registration on a server. */
export const KEEPER_SEARCH_ATTRIBUTES = [KeeperHost, ServiceId] as const;

/** A run of this host. */
export function hostAttributes(hostId: string): SearchAttributePair[] {
  return [{ key: KeeperHost, value: hostId }];
}

/** A run about one service of this host (its circuit). */
export function serviceAttributes(hostId: string, serviceId: string): SearchAttributePair[] {
  return [
    { key: KeeperHost, value: hostId },
    { key: ServiceId, value: serviceId },
  ];
}

/** The CLI's and the dev server's spelling of a type: KEYWORD → Keyword. */
export function cliTypeName(key: (typeof KEEPER_SEARCH_ATTRIBUTES)[number]): string {
  return key.type.charAt(0) + key.type.slice(1).toLowerCase();
}

/** The visibility query that lists a host's runs (the UI's and `temporal workflow list --query`'s syntax). */
export const hostRunsQuery = (hostId: string) => `${KeeperHost.name}="${hostId}"`;
/** The visibility query that lists the runs of one service. */
export const serviceRunsQuery = (serviceId: string) => `${ServiceId.name}="${serviceId}"`;
