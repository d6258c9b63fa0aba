import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../src/observability/logger.js';
import {
  apiKeyHeader,
  backends,
  startHostplane,
  upload,
  type TestHostplane,
  type TestSite,
} from '../../support/hostplane.js';

type Json = Record<string, unknown>;

/** A writable stream that keeps what a pino logger writes. */
function memoryStream() {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text };
}

async function until(condition: () => boolean, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
}

describe.each(backends)('operational endpoints (%s)', (backend) => {
  let hp: TestHostplane;
  let site: TestSite;

  beforeAll(async () => {
    hp = await startHostplane(backend);
    site = await hp.createSite('ops');
    await upload(hp, site, 'index.html', '<h1>ops</h1>');
  });
  afterAll(() => hp?.stop());

  describe('structured logs', () => {
    let logged: TestHostplane;
    let logs: ReturnType<typeof memoryStream>;
    let logSite: TestSite;
    const lines = () =>
      logs
        .text()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Json);
    const lineFor = (requestId: string) =>
      lines().find((l) => (l.req as Json | undefined)?.id === requestId && l.res !== undefined);

    beforeAll(async () => {
      logs = memoryStream();
      logged = await startHostplane(backend, { logger: createLogger('info', logs.stream) });
      logSite = await logged.createSite('logs');
    });
    afterAll(() => logged?.stop());

    it('writes one JSON line per request with its request id, method, route and status', async () => {
      await logged.request('/api/v1/files/list?page=1', {
        headers: { ...apiKeyHeader(logSite), 'x-request-id': 'log-line-1' },
      });
      await until(() => lineFor('log-line-1') !== undefined);
      const line = lineFor('log-line-1');
      expect(line).toBeDefined();
      expect(line?.req).toMatchObject({ id: 'log-line-1', method: 'GET' });
      expect(line?.res).toMatchObject({ statusCode: 200 });
    });

    it('never logs an API key, session token or minted key', async () => {
      const session = await logged.services.platform.createSession(logSite.email);
      const wrongKey = `hp_live_${randomBytes(24).toString('base64url')}`;
      await logged.request('/api/v1/files/list', {
        headers: { ...apiKeyHeader(logSite), 'x-request-id': 'secret-1' },
      });
      await logged.request('/api/v1/files/list', {
        headers: { 'x-api-key': wrongKey, 'x-request-id': 'secret-2' },
      });
      const minted = await logged.request('/api/keys/generate-temp', {
        method: 'POST',
        json: {},
        headers: {
          authorization: `Bearer ${session.token}`,
          'x-api-key': logSite.apiKey,
          'x-request-id': 'secret-3',
        },
      });
      const { temp_api_key: tempKey } = (await minted.json()) as { temp_api_key: string };
      await logged.request('/api/v1/hosting-info', {
        headers: { 'x-api-key': tempKey, 'x-request-id': 'secret-4' },
      });
      await until(() => ['secret-1', 'secret-2', 'secret-3', 'secret-4'].every((id) => lineFor(id)));
      for (const id of ['secret-1', 'secret-2', 'secret-3', 'secret-4'])
        expect(lineFor(id), id).toBeDefined();
      const text = logs.text();
      for (const secret of [logSite.apiKey, wrongKey, session.token, tempKey]) {
        expect(text).not.toContain(secret);
        expect(text).not.toContain(secret.slice(-16));
      }
    });

    it('redacts apiKey, token and password fields in application log calls', async () => {
      logged.services.logger.info(
        {
          apiKey: 'AK-should-not-appear',
          token: 'TK-should-not-appear',
          user: { password: 'PW-should-not-appear' },
        },
        'redaction check',
      );
      await until(() => logs.text().includes('redaction check'));
      const text = logs.text();
      expect(text).toContain('redaction check');
      for (const secret of ['AK-should-not-appear', 'TK-should-not-appear', 'PW-should-not-appear']) {
        expect(text).not.toContain(secret);
      }
    });
  });
});
