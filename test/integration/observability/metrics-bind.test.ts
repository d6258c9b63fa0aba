import net from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, startHostplane, type TestHostplane } from '../../support/hostplane.js';

// /metrics has no credential, so standalone it answers on loopback only (HOSTPLANE_METRICS_HOST,
// default 127.0.0.1), even when the public port listens on every interface; the chart sets
// 0.0.0.0 for Prometheus and keeps its NetworkPolicy (test/integration/chart/metrics-host.test.ts).

/** An IPv4 address of this machine that is not loopback, or undefined when it has none. */
function outsideAddress(): string | undefined {
  for (const list of Object.values(os.networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  return undefined;
}

/** Whether a TCP connection to address:port is accepted (false when refused). */
const accepts = (address: string, port: number) =>
  new Promise<boolean>((resolve, reject) => {
    const socket = net.connect({ host: address, port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', (err: NodeJS.ErrnoException) =>
      err.code === 'ECONNREFUSED' ? resolve(false) : reject(err),
    );
  });

describe('the metrics port of a standalone server', () => {
  let hp: TestHostplane;
  let metricsPort: number;

  beforeAll(async () => {
    // The public port on every interface, as `hostplane serve` defaults to; the metrics host unset.
    hp = await startHostplane('pglite+fs', { env: { HOST: '0.0.0.0', HOSTPLANE_METRICS_HOST: undefined } });
    metricsPort = Number(new URL(hp.metricsUrl).port);
  });
  afterAll(() => hp?.stop());

  it('defaults to loopback', () => {
    expect(hp.config.metricsHost).toBe('127.0.0.1');
    expect(new URL(hp.metricsUrl).hostname).toBe('127.0.0.1');
  });

  it('answers on loopback', async () => {
    const res = await fetch(`${hp.metricsUrl}/metrics`);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('hostplane_build_info');
  });

  it('is not reachable on the machine’s other addresses, where the public port is', async () => {
    const address = outsideAddress();
    if (address === undefined) {
      // A machine with loopback only: the bound address says it.
      expect(new URL(hp.metricsUrl).hostname).toBe('127.0.0.1');
      return;
    }
    expect((await rawRequest(hp.port, '/healthz', { address, headers: { host: address } })).status).toBe(200);
    expect(await accepts(address, metricsPort)).toBe(false);
    expect(await accepts('127.0.0.1', metricsPort)).toBe(true);
  });
});

describe('the metrics port with HOSTPLANE_METRICS_HOST=0.0.0.0 (the chart)', () => {
  let hp: TestHostplane;
  beforeAll(async () => {
    hp = await startHostplane('pglite+fs', { env: { HOST: '127.0.0.1', HOSTPLANE_METRICS_HOST: '0.0.0.0' } });
  });
  afterAll(() => hp?.stop());

  it('answers on every interface', async () => {
    const address = outsideAddress() ?? '127.0.0.1';
    const port = Number(new URL(hp.metricsUrl).port);
    const res = await rawRequest(port, '/metrics', { address, headers: { host: address } });
    expect(res.status).toBe(200);
  });
});
