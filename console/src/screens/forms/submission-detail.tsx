import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert, formatDate, useAction, useLoad } from '../../ui/kit.js';
import {
  formPath,
  formsCall,
  SPAM_REASONS,
  type Form,
  type SubmissionDetail,
  type SubmissionView,
} from './api.js';

type Marks = Partial<Pick<SubmissionDetail, 'is_read' | 'is_archived' | 'is_spam'>>;

/**
 * One submission: every value (as text: visitors wrote them), its metadata, its spam score with the
 * reasons, and the marks. Opening an unread one marks it read, as a mail client does.
 */
export function SubmissionDetailPanel({
  siteId,
  form,
  uuid,
  view,
  onChanged,
  onClose,
}: {
  siteId: string;
  form: Form;
  uuid: string;
  view: SubmissionView;
  onChanged(): Promise<void>;
  onClose(): void;
}) {
  const path = `${formPath(form.id)}/submissions/${encodeURIComponent(uuid)}`;
  const [current, setCurrent] = useState<SubmissionDetail>();
  const [done, setDone] = useState<string>();
  const heading = useRef<HTMLHeadingElement>(null);
  const { busy, error, run } = useAction();
  const loaded = useLoad(async () => {
    let row = (await formsCall<{ submission: SubmissionDetail }>(siteId, 'GET', path)).submission;
    if (!row.is_read) {
      row = (
        await formsCall<{ submission: SubmissionDetail }>(siteId, 'PATCH', path, { json: { is_read: true } })
      ).submission;
      await onChanged();
    }
    return row;
  }, [siteId, path]);
  useEffect(() => {
    setCurrent(loaded.data);
    setDone(undefined);
  }, [loaded.data]);
  useEffect(() => heading.current?.focus(), [uuid]);

  const mark = async (marks: Marks, words: string) => {
    setDone(undefined);
    const answer = await run(() =>
      formsCall<{ submission: SubmissionDetail }>(siteId, 'PATCH', path, { json: marks }),
    );
    if (!answer) return;
    setCurrent(answer.submission);
    setDone(words);
    await onChanged();
  };
  const remove = async () => {
    if (!confirm('Delete this submission? This cannot be undone.')) return;
    if ((await run(() => formsCall(siteId, 'DELETE', path))) === undefined) return;
    await onChanged();
    onClose();
  };

  const row = current;
  const known = new Set(form.fields.map((f) => f.name));
  const extra = row ? Object.keys(row.data).filter((name) => !known.has(name)) : [];
  return (
    <section class="card stack submission-detail" aria-labelledby="submission-title">
      <div class="detail-head">
        <h2 id="submission-title" tabIndex={-1} ref={heading}>
          Submission of {row ? formatDate(row.submitted_at) : '…'}
        </h2>
        <button type="button" class="secondary" onClick={onClose}>
          Close
        </button>
      </div>
      <Alert error={loaded.error ?? error} />
      <Alert error={done} kind="success" />
      {row && (
        <>
          <p class="detail-state">
            {[
              row.is_read ? 'Read' : 'Unread',
              row.is_archived ? 'archived' : undefined,
              row.is_spam ? 'spam' : undefined,
            ]
              .filter(Boolean)
              .join(', ')}
          </p>
          <dl class="values">
            {form.fields.map((field) => (
              <div key={field.id}>
                <dt>{field.label}</dt>
                <dd>{row.data[field.name] || <span class="hint">(empty)</span>}</dd>
              </div>
            ))}
            {extra.map((name) => (
              <div key={name}>
                <dt>{name} (no longer a field)</dt>
                <dd>{row.data[name]}</dd>
              </div>
            ))}
          </dl>
          {(row.is_spam || view === 'spam') && <SpamReasons row={row} />}
          <details>
            <summary>Metadata</summary>
            <dl class="values">
              <div>
                <dt>Origin</dt>
                <dd>{row.metadata.origin ?? '—'}</dd>
              </div>
              <div>
                <dt>Referer</dt>
                <dd>{row.metadata.referer ?? '—'}</dd>
              </div>
              <div>
                <dt>User agent</dt>
                <dd>{row.metadata.user_agent ?? '—'}</dd>
              </div>
              <div>
                <dt>Client address (keyed hash)</dt>
                <dd class="hash">{row.metadata.ip_address ?? '—'}</dd>
              </div>
              <div>
                <dt>Spam score</dt>
                <dd>{row.spam_score} of 100</dd>
              </div>
              <div>
                <dt>Read at</dt>
                <dd>{formatDate(row.read_at)}</dd>
              </div>
              <div>
                <dt>Id</dt>
                <dd class="hash">{row.uuid}</dd>
              </div>
            </dl>
          </details>
          <div class="row detail-actions">
            <button
              type="button"
              class="secondary"
              aria-disabled={busy}
              onClick={() =>
                void mark({ is_read: !row.is_read }, row.is_read ? 'Marked unread.' : 'Marked read.')
              }
            >
              {row.is_read ? 'Mark unread' : 'Mark read'}
            </button>
            <button
              type="button"
              class="secondary"
              aria-disabled={busy}
              onClick={() =>
                void mark(
                  { is_archived: !row.is_archived },
                  row.is_archived ? 'Moved back to the inbox.' : 'Archived.',
                )
              }
            >
              {row.is_archived ? 'Unarchive' : 'Archive'}
            </button>
            <button
              type="button"
              class="secondary"
              aria-disabled={busy}
              onClick={() =>
                void mark(
                  { is_spam: !row.is_spam },
                  row.is_spam ? 'Marked not spam: it is in the inbox.' : 'Moved to the spam bin.',
                )
              }
            >
              {row.is_spam ? 'Not spam' : 'Mark as spam'}
            </button>
            <button type="button" class="danger" aria-disabled={busy} onClick={() => void remove()}>
              Delete
            </button>
          </div>
        </>
      )}
    </section>
  );
}

function SpamReasons({ row }: { row: SubmissionDetail }) {
  const reasons = row.spam_reasons ?? [];
  return (
    <div class="spam-reasons">
      <h3>
        Spam score {row.spam_score} of 100 {row.is_spam ? '(spam from 70)' : ''}
      </h3>
      {reasons.length === 0 ? (
        <p>No signal added points: it was marked spam by hand.</p>
      ) : (
        <ul>
          {reasons.map((reason) => (
            <li key={reason} data-reason={reason}>
              {SPAM_REASONS[reason] ?? reason} <code>{reason}</code>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
