import { EXIT, LocalRefusal } from '../errors.js';
import type { DeployApi } from './api.js';
import { formatBytes } from './progress.js';
import { switchDeploy } from './switch.js';
import type { DeployJson, DeployListJson, HostingInfo, Io } from './types.js';

/** Deploys a site may hold: retention (at most 500 published) and drafts (100) and 20 open ones. */
const MAX_PAGES = 10;

/** `hostplane deploys`: the newest deploys as a table (or one JSON object). */
export async function deploysCommand(api: DeployApi, io: Io, limit: number): Promise<number> {
  const list = (await api.get<DeployListJson>(`/api/v1/deploys?per_page=${limit}`)).body;
  if (io.json) {
    console.log(JSON.stringify({ success: true, ...list }));
    return EXIT.ok;
  }
  if (list.deploys.length === 0) {
    io.say('No deploys yet: `hostplane deploy DIR` makes the first.');
    return EXIT.ok;
  }
  // A MESSAGE column only when some deploy shown has one (`hostplane deploy --message`).
  const messages = list.deploys.some((d) => d.message);
  const rows = list.deploys.map((d) => [
    d.id,
    d.state,
    when(d.created_at),
    String(d.file_count),
    formatBytes(d.bytes),
    madeBy(d),
    ...(messages ? [shortMessage(d.message)] : []),
    d.live ? '* live' : d.state === 'draft' && d.preview_url ? d.preview_url : '',
  ]);
  const header = [
    'ID',
    'STATE',
    'CREATED (UTC)',
    'FILES',
    'SIZE',
    'BY',
    ...(messages ? ['MESSAGE'] : []),
    '',
  ];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  for (const row of [header, ...rows])
    io.say(
      row
        .map((cell, i) => (i === 3 || i === 4 ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
        .join('  ')
        .trimEnd(),
    );
  const shown = list.deploys.length;
  if (list.pagination.total_items > shown)
    io.say(`(${shown} of ${list.pagination.total_items}: --limit N shows up to 100)`);
  if (list.live_changed_since_deploy)
    io.say(
      'The files API changed the live files since the live deploy: the next deploy, publish or rollback records them as a files_api deploy.',
    );
  return EXIT.ok;
}

/**
 * `hostplane rollback [ID]`: restores ID, or else the published deploy made before the live one
 * (so that rollbacks in a row walk back through the history). When the files API changed the live
 * files since the live deploy, that deploy itself is what a rollback returns to.
 */
export async function rollbackCommand(api: DeployApi, io: Io, id: string | undefined): Promise<number> {
  let target = id;
  if (target === undefined) {
    const { live, changed, deploys } = await history(api);
    if (!live)
      throw new LocalRefusal(
        'the site has no live deploy to roll back from: name the deploy to restore (`hostplane deploys` lists them)',
        EXIT.failed,
      );
    if (changed) {
      target = live;
      io.say(`The files API changed the live files since deploy ${live}: restoring that deploy.`);
    } else {
      const at = deploys.findIndex((d) => d.id === live);
      const previous = deploys.slice(at + 1).find((d) => d.state === 'published');
      if (!previous)
        throw new LocalRefusal(
          `deploy ${live} is live and no published deploy is older: nothing to roll back to`,
          EXIT.failed,
        );
      target = previous.id;
    }
  }
  const done = await switchDeploy(api, io, target, 'restore');
  return reportLive(api, io, done, 'Rolled back');
}

/** `hostplane publish ID`: makes a draft live. */
export async function publishCommand(api: DeployApi, io: Io, id: string): Promise<number> {
  const done = await switchDeploy(api, io, id, 'publish');
  return reportLive(api, io, done, 'Published');
}

async function reportLive(api: DeployApi, io: Io, done: DeployJson, verb: string): Promise<number> {
  const site = (await api.get<HostingInfo>('/api/v1/hosting-info')).body;
  if (io.json) console.log(JSON.stringify({ success: true, ...done, live_url: site.base_url }));
  io.say(
    `${verb}: deploy ${done.id} (created ${when(done.created_at)} UTC, ${done.file_count} files, ${formatBytes(done.bytes)}) is live at ${site.base_url}`,
  );
  return EXIT.ok;
}

/** Every deploy of the site, newest first (a few pages at most: retention bounds them). */
async function history(
  api: DeployApi,
): Promise<{ live: string | null; changed: boolean; deploys: DeployJson[] }> {
  const deploys: DeployJson[] = [];
  for (let page = 1; page <= MAX_PAGES; page++) {
    const got = (await api.get<DeployListJson>(`/api/v1/deploys?page=${page}&per_page=100`)).body;
    deploys.push(...got.deploys);
    if (!got.pagination.has_more)
      return { live: got.live_deploy_id, changed: got.live_changed_since_deploy, deploys };
  }
  throw new LocalRefusal('the site has too many deploys to search: name the deploy to restore', EXIT.failed);
}

const when = (iso: string) => iso.slice(0, 19).replace('T', ' ');

function madeBy(d: DeployJson): string {
  if (d.source === 'files_api') return 'files API';
  return d.key_prefix ? `key ${d.key_prefix}…` : 'account session';
}

/** A message on one line of at most 40 characters. */
function shortMessage(message: string | null): string {
  const line = (message ?? '').replace(/\s+/g, ' ').trim();
  return line.length > 40 ? `${line.slice(0, 39)}…` : line;
}
