import { describe, expect, it } from 'vitest';
import { SiteEvents } from '../../src/platform/site-events.js';
import type { Store } from '../../src/store/index.js';

// Site events as replicas hear them: each NOTIFY payload reaches only the handlers of its kind,
// and a lost listening connection reaches every subscriber's `missed`.

async function listening() {
  let deliver: ((payload: string) => void) | undefined;
  let reconnect: (() => void) | undefined;
  const store = {
    async listen(_channel: string, onPayload: (payload: string) => void, onReconnect?: () => void) {
      deliver = onPayload;
      reconnect = onReconnect;
      return async () => undefined;
    },
  } as unknown as Store;
  const events = new SiteEvents();
  await events.listen(store);
  const heard: string[] = [];
  const stop = events.subscribe({
    contentChanged: (siteId) => heard.push(`content ${siteId}`),
    routesChanged: () => heard.push('routes'),
    siteRemoved: (siteId) => heard.push(`removed ${siteId}`),
    missed: () => heard.push('missed'),
  });
  return {
    events,
    heard,
    stop,
    deliver: (payload: string) => deliver!(payload),
    reconnect: () => reconnect!(),
  };
}

describe('SiteEvents', () => {
  it('tells content, routes and removal apart, and ignores what it cannot read', async () => {
    const { heard, deliver, reconnect } = await listening();
    for (const payload of ['7', 'routes', 'removed:8', '', 'removed:', 'nonsense', '1.5']) deliver(payload);
    reconnect();
    expect(heard).toEqual(['content 7', 'routes', 'removed 8', 'missed']);
  });

  it('calls only the handlers a subscriber gave, until it unsubscribes', async () => {
    const { events, heard, stop, deliver } = await listening();
    const routesOnly: string[] = [];
    events.subscribe({
      routesChanged: () => routesOnly.push('routes'),
      missed: () => routesOnly.push('missed'),
    });
    events.contentChanged(3);
    deliver('removed:3');
    deliver('routes');
    stop();
    events.contentChanged(4);
    expect(heard).toEqual(['content 3', 'removed 3', 'routes']);
    expect(routesOnly).toEqual(['routes']);
  });
});
