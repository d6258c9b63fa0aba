import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ExponentialBackoffRateLimiter, WorkQueue } from '../../../controllers/runtime/workqueue.js';

/** The state of a promise without waiting for it: 'pending' or its value. */
async function peek<T>(promise: Promise<T>): Promise<T | 'pending'> {
  return Promise.race([promise, new Promise<'pending'>((resolve) => setImmediate(() => resolve('pending')))]);
}

describe('ExponentialBackoffRateLimiter', () => {
  it('doubles the delay per failure up to the cap, per key, and forget resets it', () => {
    const limiter = new ExponentialBackoffRateLimiter(100, 1_000);
    expect([1, 2, 3, 4, 5, 6].map(() => limiter.when('a'))).toEqual([100, 200, 400, 800, 1_000, 1_000]);
    expect(limiter.retries('a')).toBe(6);
    expect(limiter.when('b')).toBe(100);
    limiter.forget('a');
    expect(limiter.retries('a')).toBe(0);
    expect(limiter.when('a')).toBe(100);
  });

  it('stays at the cap after very many failures', () => {
    const limiter = new ExponentialBackoffRateLimiter(100, 300_000);
    let delay = 0;
    for (let i = 0; i < 2_000; i++) delay = limiter.when('k');
    expect(delay).toBe(300_000);
  });
});

describe('WorkQueue', () => {
  it('hands keys out in order and ignores adds of a key already queued', async () => {
    const queue = new WorkQueue({ name: 'test' });
    queue.add('a');
    queue.add('b');
    queue.add('a');
    expect(queue.len()).toBe(2);
    expect(await queue.get()).toBe('a');
    expect(await queue.get()).toBe('b');
    expect(queue.len()).toBe(0);
  });

  it('never hands a key being processed to a second worker, and re-queues it once after done', async () => {
    const queue = new WorkQueue({ name: 'test' });
    queue.add('a');
    const key = await queue.get();
    expect(key).toBe('a');
    queue.add('a');
    queue.add('a');
    queue.add('a');
    expect(queue.len()).toBe(0);
    const second = queue.get();
    expect(await peek(second)).toBe('pending');
    queue.done('a');
    expect(await second).toBe('a');
    queue.done('a');
    expect(queue.len()).toBe(0);
    expect(await peek(queue.get())).toBe('pending');
    queue.shutDown();
  });

  it('wakes a waiting worker when a key is added', async () => {
    const queue = new WorkQueue({ name: 'test' });
    const waiting = queue.get();
    expect(await peek(waiting)).toBe('pending');
    queue.add('x');
    expect(await waiting).toBe('x');
  });

  it('gives each of several waiting workers a different key', async () => {
    const queue = new WorkQueue({ name: 'test' });
    const workers = [queue.get(), queue.get(), queue.get()];
    queue.add('a');
    queue.add('b');
    expect(await workers[0]).toBe('a');
    expect(await workers[1]).toBe('b');
    expect(await peek(workers[2]!)).toBe('pending');
    queue.shutDown();
    expect(await workers[2]).toBeUndefined();
  });

  it('resolves waiting and later get() with undefined once shut down, and ignores adds', async () => {
    const queue = new WorkQueue({ name: 'test' });
    const waiting = queue.get();
    queue.shutDown();
    expect(queue.shuttingDown).toBe(true);
    expect(await waiting).toBeUndefined();
    queue.add('a');
    expect(queue.len()).toBe(0);
    expect(await queue.get()).toBeUndefined();
  });

  it('does not re-queue a dirty key on done() after shutdown', async () => {
    const queue = new WorkQueue({ name: 'test' });
    queue.add('a');
    await queue.get();
    queue.add('a');
    queue.shutDown();
    queue.done('a');
    expect(queue.len()).toBe(0);
  });

  describe('with fake timers', () => {
    beforeEach(() => {
      vi.useFakeTimers();
    });
    afterEach(() => {
      vi.useRealTimers();
    });

    it('addAfter adds the key after the delay', () => {
      const queue = new WorkQueue({ name: 'test' });
      queue.addAfter('a', 1_000);
      expect(queue.len()).toBe(0);
      vi.advanceTimersByTime(999);
      expect(queue.len()).toBe(0);
      vi.advanceTimersByTime(1);
      expect(queue.len()).toBe(1);
    });

    it('addAfter with no delay adds at once', () => {
      const queue = new WorkQueue({ name: 'test' });
      queue.addAfter('a', 0);
      expect(queue.len()).toBe(1);
    });

    it('keeps only the earliest of several delayed adds of one key', () => {
      const queue = new WorkQueue({ name: 'test' });
      queue.addAfter('a', 5_000);
      queue.addAfter('a', 1_000);
      queue.addAfter('a', 3_000);
      vi.advanceTimersByTime(1_000);
      expect(queue.len()).toBe(1);
      queue.add('b');
      // No second 'a' arrives later: the other delays were dropped.
      vi.advanceTimersByTime(10_000);
      expect(queue.len()).toBe(2);
      expect(vi.getTimerCount()).toBe(0);
    });

    it('unrefs delay timers and clears them on shutdown', () => {
      const queue = new WorkQueue({ name: 'test' });
      const setTimeoutSpy = vi.spyOn(globalThis, 'setTimeout');
      queue.addAfter('a', 1_000);
      const timer = setTimeoutSpy.mock.results[0]?.value as NodeJS.Timeout;
      expect(timer.hasRef()).toBe(false);
      queue.shutDown();
      expect(vi.getTimerCount()).toBe(0);
      vi.advanceTimersByTime(2_000);
      expect(queue.len()).toBe(0);
      setTimeoutSpy.mockRestore();
    });

    it('addRateLimited backs off exponentially until forget', () => {
      const queue = new WorkQueue({
        name: 'test',
        rateLimiter: new ExponentialBackoffRateLimiter(100, 10_000),
      });
      const delays: number[] = [];
      for (let attempt = 0; attempt < 4; attempt++) {
        queue.addRateLimited('a');
        let waited = 0;
        while (queue.len() === 0) {
          vi.advanceTimersByTime(10);
          waited += 10;
        }
        delays.push(waited);
        // Take it out again, as a worker would before failing once more.
        void queue.get();
        queue.done('a');
      }
      expect(delays).toEqual([100, 200, 400, 800]);
      expect(queue.numRequeues('a')).toBe(4);
      queue.forget('a');
      expect(queue.numRequeues('a')).toBe(0);
    });
  });
});
