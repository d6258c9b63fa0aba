import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { Alert, formatBytes } from '../ui/kit.js';
import { asOneFolder, type DeployPlan } from './deploy-rules.js';
import { FolderDeploy } from './site-deploy.js';
import { DeployProgress, FolderChoice, type PickedFolder } from './site-deploy-panel.js';
import { pickedFromDrop, pickedFromInput, UploadBatch, type Picked, type UploadRow } from './site-upload.js';

/** Below this many files every row is listed; above, the failed and the ones in flight. */
const LIST_ALL_BELOW = 50;

/**
 * Upload into the current folder, or publish a folder as the whole site: drop files or a folder on
 * the zone, or pick them with the two buttons (keyboard and screen-reader users, and browsers
 * without drag and drop). One folder (picked, or dropped alone) asks first: deploy its contents as
 * the site's root (site-deploy.ts), or upload it into the current folder as it is.
 */
export function UploadPanel({
  siteId,
  folder,
  onUploaded,
}: {
  siteId: number;
  folder: string;
  onUploaded(): Promise<void>;
}) {
  const [batch, setBatch] = useState<UploadBatch>();
  const [deploy, setDeploy] = useState<FolderDeploy>();
  const [choice, setChoice] = useState<{ folder: PickedFolder; picked: Picked[] }>();
  const [, setTick] = useState(0);
  const [over, setOver] = useState(false);
  const [notice, setNotice] = useState<string>();
  const filesInput = useRef<HTMLInputElement>(null);
  const folderInput = useRef<HTMLInputElement>(null);
  const folderButton = useRef<HTMLButtonElement>(null);
  const running = (batch?.summary().running ?? false) || (deploy?.running ?? false);

  const current = useRef<UploadBatch | undefined>(undefined);
  const currentDeploy = useRef<FolderDeploy | undefined>(undefined);
  // Leaving the file browser or the site (another tab, another site, back) stops the batch.
  useEffect(
    () => () => {
      current.current?.abort();
      currentDeploy.current?.abort();
    },
    [siteId],
  );
  // The log is the folder's: another folder starts with none (an upload under way stays shown).
  // A layout effect, so the new folder's heading is never painted beside the old folder's log.
  const firstFolder = useRef(true);
  useLayoutEffect(() => {
    if (firstFolder.current) {
      firstFolder.current = false;
      return;
    }
    setNotice(undefined);
    setChoice(undefined);
    if (!current.current?.summary().running) setBatch(undefined);
    if (!currentDeploy.current?.running) setDeploy(undefined);
  }, [folder]);

  useEffect(() => {
    // Not a JSX attribute Preact knows the type of: set on the element.
    if (folderInput.current) folderInput.current.webkitdirectory = true;
  }, []);

  const upload = async (picked: Picked[]) => {
    setChoice(undefined);
    setDeploy(undefined);
    const next = new UploadBatch(siteId, folder, picked, () => setTick((t) => t + 1));
    current.current = next;
    setBatch(next);
    await next.run();
    if (!next.stopped) await onUploaded();
  };

  const start = (picked: Picked[]) => {
    setNotice(undefined);
    if (running) return setNotice('An upload is still running: wait for it to finish.');
    if (!picked.length) return setNotice('There was nothing to upload (empty folders are skipped).');
    const one = asOneFolder(picked);
    if (!one) return void upload(picked);
    setBatch(undefined);
    setDeploy(undefined);
    setChoice({ folder: one, picked });
  };

  const deployFolder = async (name: string, plan: DeployPlan) => {
    setChoice(undefined);
    setBatch(undefined);
    const next = new FolderDeploy(siteId, name, plan, () => setTick((t) => t + 1));
    currentDeploy.current = next;
    setDeploy(next);
    await next.run();
    if (next.phase === 'live') await onUploaded();
  };

  // Not `disabled` while a batch runs: a disabled button drops the keyboard focus to the page's top.
  const pick = (input: { current: HTMLInputElement | null }) => {
    if (running) setNotice('An upload is still running: wait for it to finish.');
    else input.current?.click();
  };

  const onInput = (event: Event) => {
    const input = event.currentTarget as HTMLInputElement;
    const picked = input.files ? pickedFromInput(input.files) : [];
    input.value = '';
    start(picked);
  };

  const onDrop = (event: DragEvent) => {
    event.preventDefault();
    setOver(false);
    if (!event.dataTransfer) return;
    setNotice('Reading the dropped files…');
    pickedFromDrop(event.dataTransfer).then(start, (err: unknown) =>
      setNotice(`The dropped files could not be read: ${err instanceof Error ? err.message : String(err)}`),
    );
  };

  const where = folder ? `/${folder}` : 'the site’s root';
  return (
    <section class="card upload" aria-labelledby="upload-title">
      <h2 id="upload-title">Upload to {where}</h2>
      <div
        class={`dropzone${over ? ' over' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={onDrop}
        data-testid="dropzone"
      >
        <p>
          Drop a folder here to publish it as the whole site (its contents become the site’s root, in one
          deploy you can roll back), or drop files to add them to {where}. Or
        </p>
        <div class="upload-buttons">
          <button type="button" onClick={() => pick(filesInput)} aria-disabled={running}>
            Upload files
          </button>
          <button
            type="button"
            class="secondary"
            ref={folderButton}
            onClick={() => pick(folderInput)}
            aria-disabled={running}
          >
            Upload a folder
          </button>
        </div>
        <input
          ref={filesInput}
          type="file"
          multiple
          class="visually-hidden"
          tabIndex={-1}
          aria-label="Files to upload"
          data-testid="upload-files"
          onChange={onInput}
        />
        <input
          ref={folderInput}
          type="file"
          class="visually-hidden"
          tabIndex={-1}
          aria-label="Folder to upload"
          data-testid="upload-folder"
          onChange={onInput}
        />
        <p class="hint">
          Pages, styles, scripts, images, PDFs and fonts up to 10 MB; videos (MP4, WebM, OGG, MOV) up to 50
          MB.
        </p>
      </div>
      <Alert error={notice} kind="info" />
      {choice && (
        <FolderChoice
          siteId={siteId}
          picked={choice.folder}
          where={where}
          onDeploy={(name, plan) => void deployFolder(name, plan)}
          onUploadHere={() => void upload(choice.picked)}
          onCancel={() => {
            setChoice(undefined);
            folderButton.current?.focus();
          }}
        />
      )}
      {deploy && <DeployProgress siteId={siteId} run={deploy} />}
      {batch && <Progress batch={batch} />}
    </section>
  );
}

function Progress({ batch }: { batch: UploadBatch }) {
  const s = batch.summary();
  const rows = batch.rows.length < LIST_ALL_BELOW ? batch.rows : batch.rows.filter(shownWhenMany);
  const hidden = batch.rows.length - rows.length;
  const finished = `Upload finished: ${s.done} of ${s.total} files uploaded${s.failed ? `, ${s.failed} failed` : ''}.`;
  return (
    <div class="upload-progress" data-testid="upload-progress">
      <p class="upload-summary">
        <strong>
          {s.done} of {s.total} files
        </strong>{' '}
        · {formatBytes(s.sentBytes)} of {formatBytes(s.bytes)}
        {s.failed > 0 && <span class="upload-failed-count"> · {s.failed} failed</span>}
      </p>
      <progress aria-label="Upload progress" max={Math.max(1, s.bytes)} value={s.sentBytes} />
      <p class="visually-hidden" role="status">
        {s.running ? '' : finished}
      </p>
      <ul class="upload-rows" aria-label="Files being uploaded">
        {rows.map((row) => (
          <li key={row.path} class={`upload-row upload-${row.state}`}>
            <span class="upload-path">{row.path}</span>
            <span class="upload-state">{stateText(row)}</span>
          </li>
        ))}
      </ul>
      {hidden > 0 && <p class="hint">{hidden} more files not listed (uploaded or waiting).</p>}
    </div>
  );
}

const shownWhenMany = (row: UploadRow) => row.state === 'failed' || row.state === 'uploading';

function stateText(row: UploadRow): string {
  switch (row.state) {
    case 'waiting':
      return 'waiting';
    case 'uploading':
      return row.size ? `${Math.floor((row.sent / row.size) * 100)} %` : 'sending';
    case 'done':
      return `done (${formatBytes(row.size)})`;
    case 'failed':
      return `failed: ${row.error ?? 'unknown error'}`;
  }
}
