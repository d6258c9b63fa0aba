import { useEffect, useRef, useState } from 'preact/hooks';
import { to } from '../links.js';
import { Link } from '../router.js';
import { formatBytes } from '../ui/kit.js';
import { call } from '../api.js';
import {
  below,
  ignoreRules,
  indexOf,
  planDeploy,
  SPEC_TYPES,
  type AcceptedTypes,
  type DeployPlan,
  type FolderFile,
} from './deploy-rules.js';
import type { FolderDeploy } from './site-deploy.js';
import { useSite } from './site-nav.js';

/** A picked or dropped folder: its name and its files below it. */
export interface PickedFolder {
  name: string;
  files: FolderFile[];
}

let accepted: Promise<AcceptedTypes> | undefined;

/**
 * The file types this server accepts (its operator may add some to the spec's list), read once;
 * the spec's list when the server cannot say.
 */
function acceptedTypes(siteId: number): Promise<AcceptedTypes> {
  accepted ??= call<{ file_extensions: string[]; video_extensions: string[] }>('GET', '/api/v1/files/types', {
    query: { site_id: siteId },
  }).then(
    (r) => ({ files: new Set(r.file_extensions), videos: new Set(r.video_extensions) }),
    () => {
      accepted = undefined; // ask again next time
      return SPEC_TYPES;
    },
  );
  return accepted;
}

/** Refused files named in the list (the rest are counted). */
const NAMED = 20;

/**
 * What to do with a picked folder, asked before anything is sent: publish it as the whole site
 * (its contents become the root, one deploy) or upload it into the current folder as it is. Says
 * what a deploy would leave out and refuse, and warns when there is no index.html at its root.
 */
export function FolderChoice({
  siteId,
  picked,
  where,
  onDeploy,
  onUploadHere,
  onCancel,
}: {
  siteId: number;
  picked: PickedFolder;
  where: string;
  onDeploy(name: string, plan: DeployPlan): void;
  onUploadHere(): void;
  onCancel(): void;
}) {
  const [root, setRoot] = useState<string>();
  const [plan, setPlan] = useState<DeployPlan>();
  const heading = useRef<HTMLHeadingElement>(null);
  const files = root ? below(picked.files, root) : picked.files;
  const name = root ? `${picked.name}/${root}` : picked.name;
  const index = indexOf(files);

  useEffect(() => {
    let current = true;
    setPlan(undefined);
    void Promise.all([ignoreRules(files), acceptedTypes(siteId)]).then(
      ([rules, types]) => current && setPlan(planDeploy(files, rules, types)),
    );
    return () => {
      current = false;
    };
  }, [picked, root]);
  // Keyboard and screen-reader users land on the question the pick raised.
  useEffect(() => heading.current?.focus(), [picked, root]);

  return (
    <div
      class="folder-choice stack"
      role="group"
      aria-labelledby="folder-choice-title"
      data-testid="folder-choice"
    >
      <h3 id="folder-choice-title" tabIndex={-1} ref={heading}>
        Publish the folder {name}/ as the site?
      </h3>
      <p>
        Its contents become the site’s root: {name}/index.html is what the site’s address shows. Every file of
        the site is replaced at once, as one deploy (SQLite databases stay); the version it replaces stays
        under Deploys, to restore.
      </p>
      {!index.root && (
        <div class="alert alert-warning" role="status" data-testid="no-index">
          <p>
            There is no index.html at the root of {name}/: the site’s address would answer “404 Not Found”.
          </p>
          {index.nested && (
            <button
              type="button"
              class="secondary small"
              onClick={() => setRoot(`${root ? `${root}/` : ''}${index.nested}`)}
            >
              Use {name}/{index.nested}/ as the site’s root
            </button>
          )}
        </div>
      )}
      {plan && <PlanSummary plan={plan} />}
      <div class="row">
        {plan && plan.files.length > 0 && (
          <button type="button" onClick={() => onDeploy(name, plan)}>
            Deploy {plan.files.length} {plan.files.length === 1 ? 'file' : 'files'} as the site
          </button>
        )}
        <button type="button" class="secondary" onClick={onUploadHere}>
          Upload into {where} instead
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}

function PlanSummary({ plan }: { plan: DeployPlan }) {
  const left = plan.ignored + plan.databases.length;
  return (
    <>
      <p>
        {plan.files.length} {plan.files.length === 1 ? 'file' : 'files'} ({formatBytes(plan.bytes)}); only the
        contents the site does not have yet are uploaded.
        {left > 0 &&
          ` Left out, as hostplane deploy does: ${[
            plan.ignored &&
              `${plan.ignored} ignored (.git/, node_modules/, .DS_Store, Thumbs.db, .hostplaneignore)`,
            plan.databases.length &&
              `SQLite files ${plan.databases.join(', ')} (a site’s databases are never deployed)`,
          ]
            .filter(Boolean)
            .join('; ')}.`}
      </p>
      {plan.files.length === 0 && <p class="alert alert-error">There is nothing in this folder to deploy.</p>}
      {plan.refused.length > 0 && (
        <div class="alert alert-error" role="alert" data-testid="refused">
          <p>
            {plan.refused.length} {plan.refused.length === 1 ? 'file is' : 'files are'} refused by the server
            and left out of the deploy:
          </p>
          <ul>
            {plan.refused.slice(0, NAMED).map((r) => (
              <li key={r.path}>
                {r.path}: {r.reason}
              </li>
            ))}
          </ul>
          {plan.refused.length > NAMED && <p>… and {plan.refused.length - NAMED} more.</p>}
        </div>
      )}
    </>
  );
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/** A folder deploy under way, then its outcome: the live address and the deploy in history. */
export function DeployProgress({ siteId, run }: { siteId: number; run: FolderDeploy }) {
  const site = useSite(String(siteId));
  const { phase } = run;
  const [value, max] =
    phase === 'hashing'
      ? [run.hashed, run.total * 2]
      : phase === 'uploading'
        ? [
            run.total + (run.requiredBytes ? (run.sentBytes / run.requiredBytes) * run.total : 0),
            run.total * 2,
          ]
        : phase === 'creating'
          ? [run.total, run.total * 2]
          : [1, 1];
  const doing: Record<typeof phase, string> = {
    hashing: `Reading ${run.folderName}/: ${run.hashed} of ${run.total} files hashed`,
    creating: 'Sending the list of files…',
    uploading: `Uploading ${run.sent} of ${run.required} new files · ${formatBytes(run.sentBytes)} of ${formatBytes(run.requiredBytes)}`,
    finalizing: 'Switching the site to the new files…',
    live: '',
    failed: '',
    stopped: 'The deploy was stopped.',
  };
  return (
    <div class="upload-progress" data-testid="deploy-progress">
      {run.running && <p class="upload-summary">{doing[phase]}</p>}
      {run.running && <progress aria-label="Deploy progress" max={Math.max(1, max)} value={value} />}
      <div role="status">
        {phase === 'live' && run.deploy && (
          <div class="alert alert-success">
            <p>
              Live: {run.folderName}/ is the site, {run.total} {run.total === 1 ? 'file' : 'files'} in deploy{' '}
              <code>{run.deploy.id}</code> ({run.required} uploaded
              {run.required < run.total ? ', the rest were on the site already' : ''}), in{' '}
              {seconds((run.finishedAt ?? 0) - run.startedAt)}.
            </p>
            <p class="deploy-links">
              {site.data && (
                <a href={site.data.url} target="_blank" rel="noopener">
                  Open {site.data.url}
                </a>
              )}
              <Link href={to.siteDeploys(siteId)}>See it in Deploys</Link>
            </p>
          </div>
        )}
        {phase === 'failed' && (
          <p class="alert alert-error">The deploy failed: {run.error} The live site is as it was.</p>
        )}
      </div>
    </div>
  );
}
