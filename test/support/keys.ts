import { expect } from 'vitest';
import { startHostplane, upload, type Backend, type TestHostplane, type TestSite } from './hostplane.js';

// Shared by the authentication and generate-temp tests (test/integration/platform/).

export const past = () => new Date(Date.now() - 60_000);
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** The spec's 401: exactly {error: 'Unauthorized', message, hint_for_ai}. */
export async function expectUnauthorized(res: Response): Promise<void> {
  expect(res.status).toBe(401);
  const body = await res.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'hint_for_ai', 'message']);
  expect(body.error).toBe('Unauthorized');
  expect(typeof body.message).toBe('string');
  expect(body.message.length).toBeGreaterThan(0);
  expect(typeof body.hint_for_ai).toBe('string');
  expect(body.hint_for_ai.length).toBeGreaterThan(0);
}

/** A standard error body: exactly {error, message}. */
export async function expectError(res: Response, status: number): Promise<void> {
  expect(res.status).toBe(status);
  const body = await res.json();
  expect(Object.keys(body).sort()).toEqual(['error', 'message']);
  expect(typeof body.error).toBe('string');
  expect(typeof body.message).toBe('string');
}

export const filePaths = (body: { files: Array<{ path: string }> }) => body.files.map((f) => f.path).sort();

/** A server with two sites, each with a file of its own and one of the same name. */
export async function startTwoSites(
  backend: Backend,
): Promise<{ hp: TestHostplane; siteA: TestSite; siteB: TestSite }> {
  const hp = await startHostplane(backend);
  const siteA = await hp.createSite('site-a');
  const siteB = await hp.createSite('site-b');
  await upload(hp, siteA, 'a-only.html', 'A only');
  await upload(hp, siteA, 'shared.html', 'A version');
  await upload(hp, siteB, 'b-only.html', 'B only');
  await upload(hp, siteB, 'shared.html', 'B version');
  return { hp, siteA, siteB };
}
