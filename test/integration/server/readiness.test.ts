import { afterEach, describe, expect, it } from 'vitest';
import type { BlobStore } from '../../../src/blob/index.js';
import { startHostplane, type TestHostplane } from '../../support/hostplane.js';

/** The real blob store, except that ping fails while `down` is set (an S3 blip). */
function flakyBlobs(state: { down: boolean }) {
  return (real: BlobStore): BlobStore =>
    new Proxy(real, {
      get(target, prop, receiver) {
        if (prop === 'ping')
          return () => (state.down ? Promise.reject(new Error('blob store unreachable')) : target.ping());
        return Reflect.get(target, prop, receiver);
      },
    });
}

describe('readiness when a dependency blips', () => {
  let hp: TestHostplane | undefined;
  afterEach(async () => {
    await hp?.stop();
    hp = undefined;
  });

  it('the edge stays ready, reporting itself degraded', async () => {
    const state = { down: false };
    hp = await startHostplane('pglite+fs', { role: 'edge', wrapBlobs: flakyBlobs(state) });
    expect((await hp.request('/readyz')).status).toBe(200);
    state.down = true;
    const res = await hp.request('/readyz');
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ status: 'degraded' });
  });

  it('the api role is unready without its blob store, and ready again when it is back', async () => {
    const state = { down: true };
    hp = await startHostplane('pglite+fs', { role: 'api', wrapBlobs: flakyBlobs(state) });
    const res = await hp.request('/readyz');
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ status: 'unavailable' });
    state.down = false;
    expect((await hp.request('/readyz')).status).toBe(200);
  });
});
