/**
 * Values read from PostgreSQL and kept in memory, each in a group (a site, a database) so that a
 * change announced for the group drops its values without a scan. A read that a change overtook
 * is not kept (it may hold the state from before the change); values live `maxAgeMs` at most;
 * beyond `maxEntries` the oldest goes first. Shared by the token grants and the user sessions.
 */
export class GroupedCache<V> {
  private readonly entries = new Map<string, { value: V; group: number; loadedAt: number }>();
  private readonly keysByGroup = new Map<number, Set<string>>();
  /** Bumped by every change. */
  private epoch = 0;

  constructor(private readonly limits: { maxEntries: number; maxAgeMs: number }) {}

  /** The value kept for `key`, unless it is older than maxAgeMs (then it is dropped). */
  get(key: string, now = Date.now()): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (now - entry.loadedAt < this.limits.maxAgeMs) return entry.value;
    this.drop(key);
    return undefined;
  }

  /** Runs `load` and keeps its value under `key` in its group, unless a change came meanwhile. */
  async load(key: string, load: () => Promise<V>, groupOf: (value: V) => number): Promise<V> {
    const epoch = this.epoch;
    const loadedAt = Date.now();
    const value = await load();
    if (epoch === this.epoch) this.keep(key, value, groupOf(value), loadedAt);
    return value;
  }

  forgetGroup(group: number): void {
    if (!Number.isInteger(group)) return this.forgetAll();
    this.epoch++;
    for (const key of [...(this.keysByGroup.get(group) ?? [])]) this.drop(key);
  }

  forgetAll(): void {
    this.epoch++;
    this.entries.clear();
    this.keysByGroup.clear();
  }

  drop(key: string): void {
    const entry = this.entries.get(key);
    if (!entry) return;
    this.entries.delete(key);
    const keys = this.keysByGroup.get(entry.group);
    keys?.delete(key);
    if (keys?.size === 0) this.keysByGroup.delete(entry.group);
  }

  private keep(key: string, value: V, group: number, loadedAt: number): void {
    this.drop(key);
    if (this.entries.size >= this.limits.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.drop(oldest);
    }
    this.entries.set(key, { value, group, loadedAt });
    let keys = this.keysByGroup.get(group);
    if (!keys) this.keysByGroup.set(group, (keys = new Set()));
    keys.add(key);
  }
}
