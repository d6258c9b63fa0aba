// What the serving-*.test.ts files share: the two sites they serve (alpha with a blog, a docs folder
// without an index, its own 404.html and a secret; beta with a home page only), a GET on a site's
// host, and a raw socket exchange for what fetch cannot send or does not show.
import net from 'node:net';
import { upload, type TestHostplane, type TestSite } from '../../support/hostplane.js';

export const hostOf = (site: TestSite) => `${site.slug}.localhost:8080`;

/** Creates the sites alpha and beta with the files the serving tests read. */
export async function seedServingSites(hp: TestHostplane): Promise<{ alpha: TestSite; beta: TestSite }> {
  const alpha = await hp.createSite('alpha');
  const beta = await hp.createSite('beta');
  await upload(hp, alpha, 'index.html', '<h1>alpha home</h1>');
  await upload(hp, alpha, 'blog/index.html', '<h1>alpha blog</h1>');
  await upload(hp, alpha, 'docs/page.html', '<h1>docs page</h1>');
  await upload(hp, alpha, '404.html', '<h1>alpha has lost this page</h1>');
  await upload(hp, alpha, 'secret.html', 'ALPHA-ONLY-SECRET');
  await upload(hp, beta, 'index.html', '<h1>beta home</h1>');
  return { alpha, beta };
}

/** GET `path` on a site's subdomain, or on the host given as a string. */
export const siteGet = (
  hp: TestHostplane,
  site: TestSite | string,
  path: string,
  headers: Record<string, string> = {},
) => hp.request(path, { host: typeof site === 'string' ? site : hostOf(site), headers });

/** Sends raw request text over TCP and returns everything the server wrote before closing. */
export function rawExchange(port: number, requestText: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(requestText));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => resolve(Buffer.concat(chunks)));
  });
}

/** The bytes after the header block of a raw HTTP response. */
export const afterHeaders = (raw: Buffer) => raw.subarray(raw.indexOf('\r\n\r\n') + 4);
