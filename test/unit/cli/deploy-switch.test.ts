import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DeployApi } from '../../../src/cli/deploy/api.js';
import { switchDeploy, switchOutcome } from '../../../src/cli/deploy/switch.js';
import { ApiRefused } from '../../../src/cli/errors.js';
import type { DeployJson } from '../../../src/cli/deploy/types.js';

// What a deploy read after a switch whose answer was lost says of the switch (src/cli/deploy/switch.ts).

const deploy = (over: Partial<DeployJson>): DeployJson => ({
  id: 'k7q2m4x9a3bc',
  state: 'ready',
  draft: false,
  source: 'api',
  live: false,
  file_count: 1,
  bytes: 1,
  key_prefix: null,
  created_at: '2026-01-01T00:00:00Z',
  finalized_at: null,
  published_at: null,
  preview_url: null,
  message: null,
  changes: null,
  ...over,
});

describe('switchOutcome', () => {
  it('live is done, whichever the switch', () => {
    for (const action of ['finalize', 'publish', 'restore'] as const)
      expect(switchOutcome(deploy({ state: 'published', live: true }), action)).toBe('done');
  });

  it('a finalize: still ready is untouched; published and not live is replaced', () => {
    expect(switchOutcome(deploy({ state: 'ready' }), 'finalize')).toBe('untouched');
    expect(switchOutcome(deploy({ state: 'published' }), 'finalize')).toBe('replaced');
  });

  it("a draft's finalize is done once the deploy is a draft (or was published since)", () => {
    expect(switchOutcome(deploy({ draft: true, state: 'ready' }), 'finalize')).toBe('untouched');
    expect(switchOutcome(deploy({ draft: true, state: 'draft' }), 'finalize')).toBe('done');
    expect(switchOutcome(deploy({ draft: true, state: 'published' }), 'finalize')).toBe('done');
  });

  it('a publish: still a draft is untouched; published and not live is replaced', () => {
    expect(switchOutcome(deploy({ draft: true, state: 'draft' }), 'publish')).toBe('untouched');
    expect(switchOutcome(deploy({ draft: true, state: 'published' }), 'publish')).toBe('replaced');
  });

  it('a restore starts from published and not live: that is untouched, never replaced', () => {
    expect(switchOutcome(deploy({ state: 'published' }), 'restore')).toBe('untouched');
  });
});

describe('switchDeploy against a scripted server', () => {
  const servers: http.Server[] = [];
  afterEach(async () => {
    for (const server of servers.splice(0)) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  /**
   * Answers the publishes of `answers` in turn ('reset': reads it and resets, not acting; a status:
   * that answer) and each GET of the deploy with the next of `states`.
   */
  async function scripted(answers: ('reset' | number)[], states: Partial<DeployJson>[]) {
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      req.resume();
      const json = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (req.method === 'GET') return json(200, { deploy: deploy(states.shift()!) });
      const answer = answers.shift()!;
      if (answer === 'reset') return req.on('end', () => req.socket.resetAndDestroy());
      json(
        answer,
        answer === 200
          ? deploy({ state: 'published', live: true })
          : { error: 'Conflict', message: 'is published already' },
      );
    });
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const api = new DeployApi({
      baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      apiKey: 'k',
    });
    const said: string[] = [];
    const io = {
      json: false,
      say: (line: string) => said.push(line),
      progressOut: { write: () => true, isTTY: false },
    };
    return { api, io, seen, said };
  }

  it('a resent publish answered 409 while the deploy shows live is done (the first got there late)', async () => {
    const { api, io, seen, said } = await scripted(
      ['reset', 409],
      [
        { draft: true, state: 'draft' },
        { state: 'published', live: true },
      ],
    );
    const done = await switchDeploy(api, io, 'k7q2m4x9a3bc', 'publish');
    expect(done).toMatchObject({ live: true });
    expect(seen.filter((s) => s.startsWith('POST'))).toHaveLength(2);
    expect(said.at(-1)).toMatch(/the answer to an earlier POST .* was lost; deploy k7q2m4x9a3bc is live/);
  });

  it('a resent publish answered 409 while the deploy is still a draft is the server refusing: its answer stands', async () => {
    const { api, io } = await scripted(
      ['reset', 409],
      [
        { draft: true, state: 'draft' },
        { draft: true, state: 'draft' },
      ],
    );
    const err = await switchDeploy(api, io, 'k7q2m4x9a3bc', 'publish').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiRefused);
    expect((err as ApiRefused).status).toBe(409);
  });

  it('a first answer of 409 is a failure, with no look at the deploy', async () => {
    const { api, io, seen } = await scripted([409], []);
    await expect(switchDeploy(api, io, 'k7q2m4x9a3bc', 'publish')).rejects.toBeInstanceOf(ApiRefused);
    expect(seen).toEqual(['POST /api/v1/deploys/k7q2m4x9a3bc/publish']);
  });
});
