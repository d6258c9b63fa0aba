import { randomUUID } from 'node:crypto';
import { EXIT, LocalRefusal } from '../errors.js';
import type { DeployApi } from './api.js';
import { dryRun } from './dry-run.js';
import { checkFiles, hashAll, hashSmall, refusalError, serverFileTypes, type ManifestFile } from './hash.js';
import { formatBytes, plural, Progress } from './progress.js';
import { changesLine, retryNote, type DeployJson, type HostingInfo, type Io } from './types.js';
import { switchDeploy } from './switch.js';
import { planUploads, uploadAll } from './upload.js';
import { walk, type Skipped } from './walk.js';

export interface DeployOptions {
  dir: string;
  /** Kept with the deploy (its history shows it). */
  message: string | undefined;
  draft: boolean;
  dryRun: boolean;
  concurrency: number;
}

const SKIP_REASONS: Record<Skipped['reason'], string> = {
  database:
    'SQLite database files are never part of a deploy (the site keeps its own databases; use the SQLite API)',
  outside: 'symbolic links to places outside the folder are not followed',
  special: 'not a regular file (a dangling link, a loop of links, a socket or a device)',
};

/**
 * `hostplane deploy DIR`: lists and hashes the folder, creates a deploy from its manifest, uploads
 * only the blobs the server asks for, then finalizes it (live, or a draft at its preview URL).
 */
export async function deployCommand(api: DeployApi, io: Io, options: DeployOptions): Promise<number> {
  const started = Date.now();
  const timings: Record<string, number> = {};
  let mark = started;
  const phase = (name: string) => {
    const now = Date.now();
    timings[name] = now - mark;
    mark = now;
  };
  // The key and the server's file types (its operator may add to the spec's list) are asked at
  // once, and the folder is listed and hashed meanwhile; a refused key is still the first failure
  // reported (the listing's own failure, if any, only after).
  const asking = Promise.all([api.get<HostingInfo>('/api/v1/hosting-info'), serverFileTypes(api)]);
  // Only small files are hashed ahead (a large one may be refused by the checks, which need the answer).
  const listing = walk(options.dir).then(
    async (walked) => ({ walked, ahead: await hashSmall(walked.files) }),
    (err: unknown) => ({ err }),
  );
  const [{ body: site }, types] = await asking.catch(async (err: unknown) => {
    void listing.catch(() => undefined);
    throw err;
  });
  const listed = await listing;
  phase('check_and_scan');
  if ('err' in listed) throw listed.err;
  const { walked } = listed;
  const { ok, refused } = checkFiles(walked.files, types);
  reportSkipped(io, walked.skipped);
  if (refused.length) {
    const error = refusalError(refused);
    throw new LocalRefusal(
      error.message,
      refused.every((r) => r.limit) ? EXIT.limit : EXIT.failed,
      refused.map((r) => ({ path: r.relPath, reason: r.reason, limit: r.limit })),
    );
  }
  if (ok.length === 0)
    throw new LocalRefusal(
      `${options.dir} has no file to deploy${walked.ignored ? ` (${walked.ignored} ignored)` : ''}: a deploy replaces the whole site`,
      EXIT.failed,
    );
  const manifest = await hashAll(ok, listed.ahead);
  phase('hash');
  const totalBytes = manifest.reduce((sum, f) => sum + f.size, 0);
  io.say(
    `${options.dryRun ? 'Dry run: ' : ''}${options.draft ? 'Draft of' : 'Deploying'} ${options.dir} to ${site.subdomain} (${api.baseUrl}): ` +
      `${plural(manifest.length, 'file')}, ${formatBytes(totalBytes)}` +
      (walked.ignored ? `; ${walked.ignored} ignored` : ''),
  );

  if (options.dryRun) return dryRun(api, io, manifest, { site, skipped: walked.skipped, started });

  const files = Object.fromEntries(manifest.map((f) => [f.sitePath, f.hash]));
  // The sizes too: the server checks them before the deploy exists (the limits are checked here
  // already; the storage left is the server's to know).
  const sizes = Object.fromEntries(manifest.map((f) => [f.sitePath, f.size]));
  // One key for this run's create: its retries (a reset, a proxy's 502 or 504 after the server
  // acted) are answered the deploy the first one made, never a second deploy.
  const idempotencyKey = randomUUID();
  const created = (
    await api.post<DeployJson & { required: string[] }>(
      '/api/v1/deploys',
      {
        files,
        sizes,
        ...(options.draft ? { draft: true } : {}),
        ...(options.message === undefined ? {} : { message: options.message }),
      },
      { headers: { 'idempotency-key': idempotencyKey } },
    )
  ).body;
  phase('create');
  const plan = planUploads(manifest, created.required);
  io.say(
    `deploy ${created.id}: ${plural(plan.files.length, 'file')} to upload (${formatBytes(plan.bytes)}), ` +
      `${manifest.length - countPaths(manifest, created.required)} already on the server` +
      (created.changes ? `; against the live site: ${changesLine(created.changes)}` : ''),
  );
  // From here on the deploy exists: interrupted or failed, the command cancels it on its way out.
  const guard = cancelOnExit(api, io, created.id);
  try {
    return await uploadAndFinish(api, io, options, {
      site,
      manifest,
      walked,
      created,
      plan,
      started,
      timings,
      phase,
    });
  } catch (err) {
    await guard.cancel('the deploy failed');
    throw err;
  } finally {
    guard.release();
  }
}

interface Run {
  site: HostingInfo;
  manifest: ManifestFile[];
  walked: Awaited<ReturnType<typeof walk>>;
  created: DeployJson;
  plan: ReturnType<typeof planUploads>;
  started: number;
  timings: Record<string, number>;
  phase: (name: string) => void;
}

/** The uploads, the finalize and the report of a created deploy. */
async function uploadAndFinish(api: DeployApi, io: Io, options: DeployOptions, run: Run): Promise<number> {
  const { site, manifest, walked, created, plan, started, timings, phase } = run;
  const totalBytes = manifest.reduce((sum, f) => sum + f.size, 0);

  const progress = new Progress(io.progressOut, plan.files.length, plan.bytes);
  const sayRetry = api.onRetry;
  let window = options.concurrency;
  api.onRetry = (...args) => progress.note(retryNote(...args));
  try {
    // The window may shrink a few times in a burst of 429s: it is reported once it has settled.
    let settled: { window: number; reason: string } | undefined;
    ({ window } = await uploadAll(api, created.id, plan, options.concurrency, {
      uploaded: (f) => {
        if (settled) {
          progress.note(
            `the server takes fewer uploads at once (${settled.reason}): ${settled.window} at a time`,
          );
          settled = undefined;
        }
        progress.add(f.size);
      },
      paced: (window, reason) => {
        settled = { window, reason: settled?.reason ?? reason };
      },
    }));
  } finally {
    progress.finishLine();
    api.onRetry = sayRetry;
  }
  phase('upload');
  const done = await switchDeploy(api, io, created.id, 'finalize');
  phase('finalize');
  const url = done.draft ? done.preview_url : site.base_url;
  const changes = done.changes ?? created.changes;

  if (io.json) {
    console.log(
      JSON.stringify({
        success: true,
        id: done.id,
        state: done.state,
        draft: done.draft,
        live: done.live,
        url,
        live_url: site.base_url,
        preview_url: done.preview_url,
        message: done.message,
        changes,
        files: manifest.length,
        bytes: totalBytes,
        uploaded_files: plan.files.length,
        uploaded_bytes: plan.bytes,
        // Uploads at once at the end (lower than --concurrency when the server asked for fewer).
        concurrency: window,
        ignored: walked.ignored,
        skipped: walked.skipped.map((s) => ({ path: s.relPath, reason: s.reason })),
        duration_ms: Date.now() - started,
        timings_ms: timings,
      }),
    );
  }
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (done.draft) {
    io.say(
      done.preview_url
        ? `Draft ${done.id} ready in ${seconds} s. Preview: ${done.preview_url}`
        : `Draft ${done.id} ready in ${seconds} s (no preview host: "${done.id}--${site.subdomain}" is longer than a DNS label)`,
    );
    io.say(`Publish it with: hostplane publish ${done.id}`);
  } else {
    if (changes) io.say(`${changesLine(changes)} against the site that was live`);
    // The deploy's own address stays on it after later deploys (until it is pruned).
    const own = done.preview_url ? ` (this deploy: ${done.preview_url})` : '';
    io.say(`Deploy ${done.id} is live in ${seconds} s: ${site.base_url}${own}`);
  }
  return EXIT.ok;
}

/**
 * Cancels the deploy when the command stops before it is finalized: on SIGINT or SIGTERM (then
 * exits 130 or 143; a second signal exits at once) or on a failure (`cancel`). Only a deploy still
 * unfinished is deleted: a finalize whose answer was lost may have made it a draft or live.
 */
function cancelOnExit(api: DeployApi, io: Io, id: string) {
  let cancelling: Promise<void> | undefined;
  const cancel = (why: string) =>
    (cancelling ??= (async () => {
      try {
        const got = (await api.get<{ deploy: DeployJson }>(`/api/v1/deploys/${id}?per_page=1`)).body.deploy;
        if (got.state !== 'uploading' && got.state !== 'ready') return;
        await api.delete(`/api/v1/deploys/${id}`);
        io.say(`cancelled deploy ${id} (${why})`);
      } catch (err) {
        io.say(`could not cancel deploy ${id} (${(err as Error).message}): it expires once idle`);
      }
    })());
  const onSignal = (signal: NodeJS.Signals) => {
    const code = signal === 'SIGINT' ? 130 : 143;
    if (cancelling) process.exit(code);
    void cancel(`interrupted by ${signal}`).finally(() => process.exit(code));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    cancel,
    release() {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** How many paths have one of the hashes (the files that upload, counted by path). */
function countPaths(manifest: ManifestFile[], hashes: string[]): number {
  const wanted = new Set(hashes);
  return manifest.filter((f) => wanted.has(f.hash)).length;
}

function reportSkipped(io: Io, skipped: Skipped[]): void {
  for (const reason of ['database', 'outside', 'special'] as const) {
    const these = skipped.filter((s) => s.reason === reason);
    if (these.length === 0) continue;
    const named = these.slice(0, 5).map((s) => s.relPath);
    const more = these.length > named.length ? ` and ${these.length - named.length} more` : '';
    io.say(`skipped ${plural(these.length, 'path')} (${named.join(', ')}${more}): ${SKIP_REASONS[reason]}`);
  }
}
