/**
 * The console's only way out: the public and account APIs on its own origin. The browser session
 * is the HttpOnly cookie; every write carries the session's CSRF token. Calls on a site's behalf
 * (files, forms, SQLite) use a temporary API key minted for that site by the session, exactly as
 * spec 4.5 describes, held in memory only and minted again when it expires.
 */

/** An error the API answered, in the registry's words. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly hint?: string,
    /** Retry-After of a 429 or 503, in seconds (0 when absent). */
    readonly retryAfter = 0,
  ) {
    super(message);
  }
}

let csrfToken: string | undefined;
export const setCsrfToken = (token: string | undefined) => {
  csrfToken = token;
};

export interface CallOptions {
  json?: unknown;
  body?: BodyInit;
  headers?: Record<string, string>;
  query?: Record<string, string | number | boolean | undefined>;
  signal?: AbortSignal;
}

const SAFE = new Set(['GET', 'HEAD']);

export function withQuery(path: string, query: CallOptions['query']): string {
  if (!query) return path;
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value));
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** One call; a non-2xx answer becomes an ApiError carrying the API's message. */
export async function call<T>(method: string, path: string, options: CallOptions = {}): Promise<T> {
  const response = await send(method, path, options);
  if (response.status === 204) return undefined as T;
  const type = response.headers.get('content-type') ?? '';
  return (type.includes('json') ? await response.json() : await response.text()) as T;
}

/**
 * Sudo mode: an action the API refuses with SUDO_REQUIRED (deleting a site, creating a key, and
 * with the site's temporary key installing a SQLite database or adding an end user) asks the owner
 * to confirm their password in the dialog the signed-in shell registers, then is tried once more
 * (the key reads its session's confirmation live). Calls refused together share one dialog.
 */
type SudoPrompt = () => Promise<boolean>;
let sudoPrompt: SudoPrompt | undefined;
let sudoPending: Promise<boolean> | undefined;
export const setSudoPrompt = (prompt: SudoPrompt | undefined) => {
  sudoPrompt = prompt;
};
function confirmSudo(): Promise<boolean> {
  if (!sudoPrompt) return Promise.resolve(false);
  sudoPending ??= sudoPrompt().finally(() => {
    sudoPending = undefined;
  });
  return sudoPending;
}

/** The raw response (downloads); still refuses a non-2xx answer with the API's message. */
export async function send(method: string, path: string, options: CallOptions = {}): Promise<Response> {
  try {
    return await sendOnce(method, path, options);
  } catch (err) {
    if (err instanceof ApiError && err.code === 'SUDO_REQUIRED' && (await confirmSudo()))
      return sendOnce(method, path, options);
    throw err;
  }
}

async function sendOnce(method: string, path: string, options: CallOptions): Promise<Response> {
  const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
  let body = options.body;
  if (options.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(options.json);
  }
  if (!SAFE.has(method) && csrfToken) headers['x-csrf-token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(withQuery(path, options.query), {
      method,
      headers,
      body,
      credentials: 'same-origin',
      signal: options.signal,
    });
  } catch (err) {
    if (err instanceof DOMException && err.name === 'AbortError') throw err;
    throw new ApiError(0, 'NETWORK', 'The server could not be reached. Check your connection and try again.');
  }
  if (!response.ok) throw await errorOf(response);
  return response;
}

export async function errorOf(response: Response): Promise<ApiError> {
  try {
    const body = (await response.json()) as { error?: string; message?: string; hint_for_ai?: string };
    if (body.message)
      return new ApiError(
        response.status,
        body.error ?? 'ERROR',
        humanMessage(body.message),
        body.hint_for_ai,
        retryAfterSeconds(response.headers.get('retry-after')),
      );
  } catch {
    // not JSON: a proxy's page, say
  }
  return new ApiError(response.status, 'HTTP_' + response.status, `The server answered ${response.status}.`);
}

/** Retry-After in seconds: a number of seconds or an HTTP date (RFC 9110 10.2.3); 0 when absent. */
export function retryAfterSeconds(header: string | null): number {
  if (!header) return 0;
  const seconds = Number(header);
  if (Number.isFinite(seconds)) return Math.max(0, seconds);
  const at = Date.parse(header);
  return Number.isNaN(at) ? 0 : Math.max(1, Math.ceil((at - Date.now()) / 1000));
}

/** What the console calls the API's fields when it names them to a person. */
const FIELD_WORDS: Record<string, string> = {
  slug: 'The subdomain',
  new_path: 'The new name',
  path: 'The path',
  name: 'The name',
  email: 'The email address',
  hostname: 'The domain',
  password: 'The password',
  new_password: 'The new password',
  current_password: 'Your current password',
  notification_email: 'The notification address',
};

/**
 * The API's words where a person reads better ones: its validation messages name JSON fields
 * (`new_path must not be empty`), and some answers speak to a program. Anything else is kept.
 */
export function humanMessage(message: string): string {
  if (message === 'This token is read-only.')
    return 'This console is read-only for now: tick “Allow writes to this database” to change data.';
  return message
    .split('; ')
    .map((part) => {
      const taken = /^the slug "(.+)" is already taken$/.exec(part);
      if (taken) return `The subdomain “${taken[1]}” is taken: choose another.`;
      if (part.startsWith('slug must be'))
        return 'The subdomain can have lower-case letters (a–z), digits and single hyphens, at most 63 characters, and cannot start or end with a hyphen.';
      const issue = /^([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)*) (must not be empty|is required|must .+)$/.exec(part);
      if (!issue) return part;
      const field = issue[1]!;
      const label =
        FIELD_WORDS[field] ??
        `The ${field.replace(/[._]/g, ' ').replace(/\b\d+\b/g, (n) => `#${Number(n) + 1}`)}`;
      const rest =
        issue[2] === 'must not be empty'
          ? 'cannot be empty'
          : issue[2] === 'is required'
            ? 'is needed'
            : issue[2]!;
      return `${label} ${rest}${/[.!?]$/.test(rest) ? '' : '.'}`;
    })
    .join(' ');
}

/** Words for any failure, for an alert. */
export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return 'Something went wrong.';
}

interface MintedKey {
  key: string;
  expiresAt: number;
}
const siteKeys = new Map<number, Promise<MintedKey>>();

async function mint(siteId: number): Promise<MintedKey> {
  const answer = await call<{ temp_api_key: string; expires_at: string }>('POST', '/api/keys/generate-temp', {
    json: { storage_folder_id: siteId, expires_in: 3600 },
  });
  return { key: answer.temp_api_key, expiresAt: Date.parse(answer.expires_at) };
}

/** Mints a key for the site and keeps it as the one every later call shares. */
function mintShared(siteId: number): Promise<MintedKey> {
  const pending = mint(siteId);
  siteKeys.set(siteId, pending);
  // A failed mint is forgotten, but only if no later mint has taken its place meanwhile.
  pending.catch(() => siteKeys.get(siteId) === pending && siteKeys.delete(siteId));
  return pending;
}

/**
 * The site's temporary key, minted once and again a minute before it expires. With `refused`
 * (a key the API just answered 401 to) a new key is minted only if that key is still the shared
 * one: calls refused together, say four pages read at once, share one new key instead of each
 * minting its own.
 */
async function siteKey(siteId: number, refused?: string): Promise<string> {
  const pending = siteKeys.get(siteId);
  if (pending) {
    // A failed mint (the session ended) fails every call that waited for it, without minting again.
    const minted = await pending;
    const now = siteKeys.get(siteId);
    // Another call replaced the key while this one waited: that one is newer.
    if (now && now !== pending) return siteKey(siteId, refused);
    if (minted.key !== refused && minted.expiresAt - Date.now() > 60_000) return minted.key;
  }
  return (await mintShared(siteId)).key;
}

const signOutHooks: Array<() => Promise<void>> = [];
/** Work to do at sign-out while the session still holds (revoking what the console minted itself). */
export const beforeSignOut = (hook: () => Promise<void>) => void signOutHooks.push(hook);
export const runBeforeSignOut = () =>
  Promise.allSettled(signOutHooks.map((hook) => hook())).then(() => undefined);

/** Forgets every minted key (sign-out). */
export const forgetSiteKeys = () => siteKeys.clear();

/**
 * A call with the site's key in X-API-Key; a 401 to that key (it expired early or was revoked)
 * gets one new key and one more try. A failed mint (the session itself ended) is not retried.
 */
export async function siteSend(siteId: number, method: string, path: string, options: CallOptions = {}) {
  const attempt = (key: string) =>
    send(method, path, { ...options, headers: { ...options.headers, 'x-api-key': key } });
  const key = await siteKey(siteId);
  try {
    return await attempt(key);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return attempt(await siteKey(siteId, key));
    throw err;
  }
}

export async function siteCall<T>(siteId: number, method: string, path: string, options: CallOptions = {}) {
  const response = await siteSend(siteId, method, path, options);
  if (response.status === 204) return undefined as T;
  return (await response.json()) as T;
}

/**
 * The site's key for calls the console makes itself (XMLHttpRequest uploads with progress); pass
 * `refused` after a 401 to that key to get a new one.
 */
export const siteKeyFor = (siteId: number, refused?: string) => siteKey(siteId, refused);
