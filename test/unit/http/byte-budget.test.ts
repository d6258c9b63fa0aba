import { describe, expect, it } from 'vitest';
import { ByteBudget } from '../../../src/http/byte-budget.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const budget = () => new ByteBudget({ maxBytes: 128 * MiB, maxSiteBytes: 32 * MiB, minBytes: 64 * KiB });

describe('ByteBudget', () => {
  it('admits many small bodies of one site side by side (each reserves the minimum)', () => {
    const b = budget();
    const held = Array.from({ length: 64 }, () => b.reserve('site:1', 2 * KiB));
    expect(held.every((r) => r.ok)).toBe(true);
    expect(b.bytes('site:1')).toBe(64 * 64 * KiB);
    expect(b.inFlight()).toBe(64);
  });

  it('caps one site at its share (429) and leaves the rest of the budget to the others', () => {
    const b = budget();
    expect(b.reserve('site:a', 16 * MiB).ok).toBe(true);
    expect(b.reserve('site:a', 16 * MiB).ok).toBe(true);
    expect(b.reserve('site:a', 1)).toEqual({ ok: false, cap: 'site', held: 32 * MiB, limit: 32 * MiB });
    // Another site is not starved by site a's large uploads.
    expect(b.reserve('site:b', 16 * MiB).ok).toBe(true);
    expect(b.bytes()).toBe(48 * MiB);
  });

  it('refuses a body larger than what is left of the process budget (503), then admits it once bytes are released', () => {
    const b = budget();
    const held = ['a', 'b', 'c', 'd'].map((s) => b.reserve(`site:${s}`, 31 * MiB));
    expect(b.bytes()).toBe(124 * MiB);
    expect(b.reserve('site:e', 8 * MiB)).toEqual({
      ok: false,
      cap: 'process',
      held: 124 * MiB,
      limit: 128 * MiB,
    });
    expect(b.reserve('site:e', 4 * MiB).ok).toBe(true); // what fits still goes in
    const first = held[0]!;
    if (!first.ok) throw new Error('expected a reservation');
    first.release();
    expect(b.reserve('site:e', 8 * MiB).ok).toBe(true);
  });

  it('reserves at most a site’s share, so any body is admitted on a quiet process', () => {
    const b = budget();
    const r = b.reserve('site:a', 500 * MiB);
    expect(r).toMatchObject({ ok: true, bytes: 32 * MiB });
    expect(b.cost(0)).toBe(64 * KiB);
    expect(b.cost(100 * KiB)).toBe(100 * KiB);
  });

  it('returns to zero when every reservation is released, and a second release changes nothing', () => {
    const b = budget();
    const rs = [b.reserve('site:a', 3 * MiB), b.reserve('site:a', 5 * MiB), b.reserve('site:b', 1)];
    for (const r of rs) {
      if (!r.ok) throw new Error('expected a reservation');
      r.release();
      r.release();
    }
    expect(b.bytes()).toBe(0);
    expect(b.bytes('site:a')).toBe(0);
    expect(b.inFlight()).toBe(0);
  });

  it('refuses a share larger than the budget', () => {
    expect(() => new ByteBudget({ maxBytes: MiB, maxSiteBytes: 2 * MiB, minBytes: 1 })).toThrow();
  });
});
