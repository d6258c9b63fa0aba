import { describe, expect, it } from 'vitest';
import { hostOrigin, matchedOrigin, originHost } from '../../../src/http/origins.js';

const BASE = 'https://hostplane.example';
const SITE = 'https://shop.sites.example';

describe('the Origin rule (spec 5.6: equal to an allowed origin)', () => {
  it('builds origins as browsers serialise them: scheme, lower-case host, port only when not default', () => {
    expect(hostOrigin(BASE, 'Shop.Sites.Example')).toBe(SITE);
    expect(hostOrigin('http://localhost:8080', 'a.localhost')).toBe('http://a.localhost:8080');
    expect(hostOrigin('https://x.example:443', 'a.example')).toBe('https://a.example');
  });

  it('matches the exact serialisation only, and echoes only what matched', () => {
    expect(matchedOrigin(SITE, [SITE])).toBe(SITE);
    for (const lookalike of [
      `${SITE}/`,
      `${SITE}/path?q=1`,
      'https://SHOP.sites.example',
      'https://user@shop.sites.example',
      `blob:${SITE}/uuid`,
      ` ${SITE}`,
      `${SITE} `,
      'http://shop.sites.example',
      'https://shop.sites.example:443',
      'null',
      '',
      undefined,
    ])
      expect(matchedOrigin(lookalike, [SITE]), String(lookalike)).toBeUndefined();
  });

  it('reads the host of a serialised origin under the base scheme and port only', () => {
    expect(originHost(BASE, SITE)).toBe('shop.sites.example');
    for (const other of [
      `${SITE}/`,
      'https://SHOP.sites.example',
      'https://u@shop.sites.example',
      `blob:${SITE}/uuid`,
      ` ${SITE}`,
      'http://shop.sites.example',
      'https://shop.sites.example:8443',
      'null',
      'not a url',
      undefined,
    ])
      expect(originHost(BASE, other), String(other)).toBeUndefined();
  });
});
