import type { IncomingMessage, ServerResponse } from 'node:http';
import { AppError } from '../errors/index.js';
import { sendJson } from './raw.js';

// `scheme://authority` then the path and query, as they arrive (never normalised: the edge and the
// routes decode the path themselves, exactly as for an origin-form target).
const ABSOLUTE_FORM = /^([A-Za-z][A-Za-z0-9+.-]*):\/\/([^/?#]*)([^#]*)$/;

/**
 * RFC 9112 §3.2.2: a request whose target is in absolute-form (`GET http://site-b/x HTTP/1.1`, as
 * clients send to a proxy) names its host in the target, and the server must ignore `Host`. The
 * request is rewritten before anything reads either — the target's authority becomes `Host` and
 * the target its path and query — so the site chosen, the edge's host cache and the API's host
 * checks all see one host. An absolute target that names no usable http(s) host (another scheme,
 * userinfo, an empty or malformed authority) is answered 400 and false is returned.
 */
export function toOriginForm(req: IncomingMessage, res: ServerResponse): boolean {
  const url = req.url ?? '/';
  if (url.startsWith('/') || url === '*') return true;
  const host = absoluteTarget(url);
  if (!host) {
    const refusal = new AppError('INVALID_REQUEST', {
      message:
        'The request target must be a path, or an absolute http(s) URL naming a host (RFC 9112 section 3.2).',
    });
    sendJson(res, refusal.status, refusal.body);
    return false;
  }
  req.headers.host = host.authority;
  req.url = host.path;
  return true;
}

/** The authority (host[:port], lower case) and origin-form target of an absolute-form target. */
function absoluteTarget(url: string): { authority: string; path: string } | undefined {
  const match = ABSOLUTE_FORM.exec(url);
  if (!match) return undefined;
  const [, scheme, authority, rest] = match as unknown as [string, string, string, string];
  const lower = scheme.toLowerCase();
  if ((lower !== 'http' && lower !== 'https') || authority === '' || authority.includes('@'))
    return undefined;
  let parsed: URL;
  try {
    parsed = new URL(`${lower}://${authority}/`);
  } catch {
    return undefined;
  }
  if (parsed.hostname === '') return undefined;
  return { authority: parsed.host, path: rest.startsWith('/') ? rest : `/${rest}` };
}
