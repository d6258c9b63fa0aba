import { ApiRefused, EXIT, LocalRefusal, NotSentAgain } from '../errors.js';
import type { DeployApi } from './api.js';
import type { DeployJson, Io } from './types.js';

/** The calls that switch what a site serves (POST /api/v1/deploys/{id}/{action}). */
export type SwitchAction = 'finalize' | 'publish' | 'restore';

/**
 * What a deploy, read after a switch whose answer was lost, says of it: `done` (live; a draft's
 * finalize: a draft), `untouched` (still in its state before: the switch is still to make), or
 * `replaced` (it was made live, and another deploy went live since).
 */
export function switchOutcome(deploy: DeployJson, action: SwitchAction): 'done' | 'untouched' | 'replaced' {
  if (deploy.live) return 'done';
  if (action === 'finalize' && deploy.draft && deploy.state !== 'ready') return 'done';
  // Published and not live: a finalize or a publish made it so, then another deploy went live; a
  // restore starts from there (it may not have reached the server yet).
  return deploy.state === 'published' && action !== 'restore' ? 'replaced' : 'untouched';
}

/**
 * Makes a switch once. The server answers a repeat of a finalize or a publish that worked with a
 * 409 (`is already finalized`, `is published already`) and switches again on a repeated restore, so
 * the call is not repeated blindly: when its answer is lost once it reached the server, the
 * deploy's state says whether it switched; only a deploy still untouched is sent it again, and a
 * 409 to that is settled the same way. A switch made is reported as done (with a note), never a
 * failure; one another deploy replaced meanwhile fails saying so.
 */
export async function switchDeploy(
  api: DeployApi,
  io: Io,
  id: string,
  action: SwitchAction,
): Promise<DeployJson> {
  const path = `/api/v1/deploys/${encodeURIComponent(id)}/${action}`;
  try {
    return (await api.post<DeployJson>(path, undefined, { repeatable: false })).body;
  } catch (err) {
    if (!(err instanceof NotSentAgain)) throw err;
    const done = await settle(api, io, id, action, `the answer to ${err.what} was lost (${err.reason})`);
    if (done) return done;
    io.say(`deploy ${id} is unchanged: sending POST ${path} again`);
  }
  try {
    return (await api.post<DeployJson>(path)).body;
  } catch (err) {
    // A 409 to a deploy still untouched is a real conflict: the server's own answer stands.
    if (!(err instanceof ApiRefused) || err.status !== 409) throw err;
    const done = await settle(api, io, id, action, `the answer to an earlier POST ${path} was lost`);
    if (done) return done;
    throw err;
  }
}

/** The deploy when the switch is done (noted); undefined when it is untouched; a failure when replaced. */
async function settle(
  api: DeployApi,
  io: Io,
  id: string,
  action: SwitchAction,
  lost: string,
): Promise<DeployJson | undefined> {
  const path = `/api/v1/deploys/${encodeURIComponent(id)}?per_page=1`;
  const now = (await api.get<{ deploy: DeployJson }>(path)).body.deploy;
  const outcome = switchOutcome(now, action);
  if (outcome === 'untouched') return undefined;
  if (outcome === 'replaced')
    throw new LocalRefusal(
      `${lost}; deploy ${id} went live but is not live: another deploy went live since (\`hostplane deploys\` shows which)`,
      EXIT.failed,
    );
  io.say(`${lost}; deploy ${id} is ${now.live ? 'live' : 'a draft'}: the ${action} went through`);
  return now;
}
