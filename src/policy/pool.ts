/**
 * Pool sizing, pure: which templates are pooled, and how many new containers each gets on a refill.
 * Pooled templates come from the `--pooled-templates` setting (ids or names, in priority order), never from
 * the order of rows in environment_templates (W-P7).
 */

export interface TemplateRef {
  id: string;
  name: string;
}

export interface PooledTemplates<T extends TemplateRef = TemplateRef> {
  /** The templates to keep warm, in the setting's priority order, each once. */
  pooled: T[];
  /** Entries of the setting that match no template (reported, never guessed at). */
  unknown: string[];
}

/** Resolves the setting's entries to templates, by id first and then by name, as ah's GetTemplate does. */
export function resolvePooledTemplates<T extends TemplateRef>(setting: string[], templates: T[]): PooledTemplates<T> {
  const pooled: T[] = [];
  const unknown: string[] = [];
  for (const entry of setting) {
    const t = templates.find((x) => x.id === entry) ?? templates.find((x) => x.name === entry);
    if (!t) unknown.push(entry);
    else if (!pooled.some((p) => p.id === t.id)) pooled.push(t);
  }
  return { pooled, unknown };
}

export interface RefillInput {
  /** Pooled template ids in priority order. */
  pooled: string[];
  /** Ready rows per template id, pooled or not (every ready row counts towards the total). */
  ready: Record<string, number>;
  size: number;
  maxTotal: number;
}

export interface RefillStep {
  templateId: string;
  count: number;
}

/**
 * Fills each pooled template up to `size`, in priority order, until `maxTotal` ready containers exist over
 * all templates. Returns only the templates that get at least one new container.
 */
export function planRefill({ pooled, ready, size, maxTotal }: RefillInput): RefillStep[] {
  let total = Object.values(ready).reduce((a, b) => a + b, 0);
  const steps: RefillStep[] = [];
  for (const templateId of pooled) {
    const room = maxTotal - total;
    if (room <= 0) break;
    const need = Math.max(0, size - (ready[templateId] ?? 0));
    const count = Math.min(need, room);
    if (count > 0) {
      steps.push({ templateId, count });
      total += count;
    }
  }
  return steps;
}

/** Whether one more container for `templateId` still fits: the last check before creating it. */
export function hasRoom(templateId: string, ready: Record<string, number>, size: number, maxTotal: number): boolean {
  const total = Object.values(ready).reduce((a, b) => a + b, 0);
  return (ready[templateId] ?? 0) < size && total < maxTotal;
}

/** Docker's bridge option that, set to "false", drops traffic between the containers of one network. */
export const BRIDGE_ICC_OPTION = 'com.docker.network.bridge.enable_icc';

/**
 * The options keeper creates `ah-pool` with (internal, as ah's, is set by the network helper): no traffic
 * between its members, so a claimed container still attached to it reaches no pool container, nor they it.
 */
export const POOL_NETWORK_OPTIONS: Record<string, string> = { [BRIDGE_ICC_OPTION]: 'false' };

/**
 * Whether a claimed container may stay on the pool network until the next refill detaches it: only when the
 * network isolates its members (no inter-container traffic, no route out). An `ah-pool` made by ah, or by
 * anything else, is not trusted, and the claim then detaches at once.
 */
export function poolNetworkIsolates(net: { internal: boolean; options: Record<string, string> }): boolean {
  return net.internal && net.options[BRIDGE_ICC_OPTION] === 'false';
}

/**
 * A ready pool container that is down this long is dead (W-P10 in docs/ah-differences.md): the engine brings its own containers back within seconds of
 * starting (unless-stopped), while during its shutdown, for up to ~10 s, it still answers with them exited.
 */
export const POOL_DEAD_AFTER_MS = 15_000;

/** Whether a ready pool container is dead: down (exited or dead) for POOL_DEAD_AFTER_MS, so no claim may take it. */
export function isDeadPoolContainer(state: string, finishedAtMs: number | null, nowMs: number): boolean {
  if (state !== 'exited' && state !== 'dead') return false;
  return finishedAtMs === null || nowMs - finishedAtMs >= POOL_DEAD_AFTER_MS;
}
