import { describe, expect, it } from 'vitest';
import { DiskIndex } from '../../../src/edge/disk-index.js';

// The disk cache's bookkeeping: bounded by bytes, least recently used first out, fills reserved.

describe('DiskIndex', () => {
  it('evicts the least recently used blobs to make room, and only as many as needed', () => {
    const index = new DiskIndex(10);
    index.add('a', 4);
    index.add('b', 4);
    expect(index.touch('a')).toBe(true);
    expect(index.reserve(4)).toEqual(['b']);
    index.commit('c', 4);
    expect([index.has('a'), index.has('b'), index.has('c'), index.bytes]).toEqual([true, false, true, 8]);
    expect(index.reserve(2)).toEqual([]);
  });

  it('counts fills in flight against the bound, and gives their room back when they fail', () => {
    const index = new DiskIndex(10);
    expect(index.reserve(6)).toEqual([]);
    expect(index.reserve(6)).toBeUndefined();
    index.release(6);
    expect(index.reserve(6)).toEqual([]);
    index.add('a', 4);
    expect(index.reserve(1)).toEqual(['a']);
  });

  it('refuses a blob larger than the whole cache without evicting anything', () => {
    const index = new DiskIndex(10);
    index.add('a', 5);
    expect(index.reserve(11)).toBeUndefined();
    expect(index.has('a')).toBe(true);
  });

  it('keeps the bound when files found on disk exceed it (the oldest added first go first)', () => {
    const index = new DiskIndex(10);
    expect(index.add('old', 6)).toEqual([]);
    expect(index.add('new', 6)).toEqual(['old']);
    expect(index.bytes).toBe(6);
    expect(index.remove('new')).toBe(true);
    expect([index.bytes, index.size, index.touch('new')]).toEqual([0, 0, false]);
  });
});
