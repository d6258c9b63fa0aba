import { EXIT } from '../errors.js';
import type { DeployApi } from './api.js';
import type { ManifestFile } from './hash.js';
import { formatBytes, plural } from './progress.js';
import type { DeployListJson, HostingInfo, Io, ManifestPageJson } from './types.js';
import type { Skipped } from './walk.js';

const LISTED = 20;

/**
 * `deploy --dry-run`: the API answers which hashes it lacks only by creating a deploy, which a dry
 * run must not do. So the folder is compared with the live deploy's manifest (read-only calls):
 * what would be added, changed and removed, and the bytes that would upload at most (fewer when an
 * earlier deploy of the site holds some of them).
 */
export async function dryRun(
  api: DeployApi,
  io: Io,
  manifest: ManifestFile[],
  ctx: { site: HostingInfo; skipped: Skipped[]; started: number },
): Promise<number> {
  const list = (await api.get<DeployListJson>('/api/v1/deploys?per_page=1')).body;
  const live = list.live_deploy_id;
  const liveFiles = live ? await manifestOf(api, live) : new Map<string, string>();
  const known = new Set(liveFiles.values());

  const added: string[] = [];
  const changed: string[] = [];
  let unchanged = 0;
  const local = new Set<string>();
  const upload = new Map<string, ManifestFile>();
  for (const file of manifest) {
    local.add(file.sitePath);
    const before = liveFiles.get(file.sitePath);
    if (before === undefined) added.push(file.sitePath);
    else if (before !== file.hash) changed.push(file.sitePath);
    else unchanged++;
    if (!known.has(file.hash) && !upload.has(file.hash)) upload.set(file.hash, file);
  }
  const removed = [...liveFiles.keys()].filter((p) => !local.has(p));
  const uploadBytes = [...upload.values()].reduce((sum, f) => sum + f.size, 0);

  if (io.json) {
    console.log(
      JSON.stringify({
        success: true,
        dry_run: true,
        compared_with: live,
        live_changed_since_deploy: list.live_changed_since_deploy,
        files: manifest.length,
        bytes: manifest.reduce((sum, f) => sum + f.size, 0),
        upload_files_at_most: upload.size,
        upload_bytes_at_most: uploadBytes,
        added,
        changed,
        removed,
        unchanged,
        skipped: ctx.skipped.map((s) => ({ path: s.relPath, reason: s.reason })),
        duration_ms: Date.now() - ctx.started,
      }),
    );
  }
  if (live) {
    io.say(
      `compared with the live deploy ${live}: ${added.length} added, ${changed.length} changed, ${removed.length} removed, ${unchanged} unchanged`,
    );
    if (list.live_changed_since_deploy)
      io.say('note: the files API changed the live files since that deploy; they are not in this comparison');
  } else {
    io.say(`${ctx.site.subdomain} has no live deploy yet: every file is new to it`);
  }
  for (const [sign, paths] of [
    ['+', added],
    ['~', changed],
    ['-', removed],
  ] as const) {
    for (const p of paths.slice(0, LISTED)) io.say(`  ${sign} ${p}`);
    if (paths.length > LISTED) io.say(`  ${sign} … and ${paths.length - LISTED} more`);
  }
  io.say(
    `would upload at most ${plural(upload.size, 'file')} (${formatBytes(uploadBytes)}); nothing was uploaded or changed`,
  );
  return EXIT.ok;
}

/** path → hash of a deploy, read a page of 1000 at a time. */
async function manifestOf(api: DeployApi, id: string): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (let page = 1; ; page++) {
    const got = (await api.get<ManifestPageJson>(`/api/v1/deploys/${id}?page=${page}&per_page=1000`)).body;
    for (const f of got.files) files.set(f.path, f.hash);
    if (!got.pagination.has_more) return files;
  }
}
