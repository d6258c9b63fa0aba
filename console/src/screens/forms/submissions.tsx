import { useEffect, useState } from 'preact/hooks';
import type { ScreenProps } from '../screen.js';
import { Alert, formatDate, useAction, useLoad } from '../../ui/kit.js';
import {
  formPath,
  formsCall,
  formsSend,
  type Form,
  type Submission,
  type SubmissionPage,
  type SubmissionView,
} from './api.js';
import { FormFrame, useForm } from './form-frame.js';
import { SubmissionDetailPanel } from './submission-detail.js';

type View = SubmissionView;
const VIEWS: Array<[View, string]> = [
  ['inbox', 'Inbox'],
  ['archived', 'Archived'],
  ['spam', 'Spam'],
];
const PER_PAGE = 25;

/** The list filters of a view: the inbox is neither spam nor archived, the spam bin is all spam. */
function viewFilters(view: View) {
  if (view === 'inbox') return { is_spam: false, is_archived: false };
  if (view === 'archived') return { is_spam: false, is_archived: true };
  return { is_spam: true };
}

/** A date input's day as the instant it starts (from) or ends (to), in the browser's time zone. */
function dayBound(day: string, end: boolean): string | undefined {
  if (!day) return undefined;
  const date = new Date(`${day}T00:00:00`);
  if (Number.isNaN(date.getTime())) return undefined;
  if (end) date.setDate(date.getDate() + 1);
  return new Date(date.getTime() - (end ? 1 : 0)).toISOString();
}

const initialView = (): View => {
  const asked = new URLSearchParams(location.search).get('view');
  return asked === 'archived' || asked === 'spam' ? asked : 'inbox';
};

/** A form's submissions: Inbox, Archived and Spam, paged, with date bounds and CSV export. */
export function FormSubmissions({ params }: ScreenProps) {
  const siteId = params.siteId!;
  const formId = params.formId!;
  const form = useForm(siteId, formId);
  const [view, setView] = useState<View>(initialView);
  const [page, setPage] = useState(1);
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [open, setOpen] = useState<string>();
  const exporting = useAction();
  const filters = { ...viewFilters(view), from_date: dayBound(from, false), to_date: dayBound(to, true) };
  const list = useLoad(
    () =>
      formsCall<SubmissionPage>(siteId, 'GET', `${formPath(formId)}/submissions`, {
        query: { ...filters, page, per_page: PER_PAGE },
      }),
    [siteId, formId, view, page, from, to],
  );
  useEffect(() => {
    // The view lives in the address, so a reload or a shared link opens the same bin.
    history.replaceState(
      null,
      '',
      view === 'inbox' ? location.pathname : `${location.pathname}?view=${view}`,
    );
  }, [view]);

  const close = () => {
    const was = open;
    setOpen(undefined);
    // The panel held the focus and is gone: back to the row it was opened from, or (deleted, or
    // moved out of this view) to the view's button, so a keyboard user is not sent to the page top.
    requestAnimationFrame(() => {
      const row = was && document.querySelector<HTMLElement>(`tr[data-uuid="${CSS.escape(was)}"] button`);
      (row || document.querySelector<HTMLElement>('.views [aria-pressed="true"]'))?.focus();
    });
  };
  const choose = (next: View) => {
    setView(next);
    setPage(1);
    setOpen(undefined);
  };
  const exportCsv = () =>
    exporting.run(async () => {
      const response = await formsSend(siteId, 'GET', `${formPath(formId)}/submissions/export`, {
        query: filters,
        headers: { accept: 'text/csv' },
      });
      const url = URL.createObjectURL(await response.blob());
      const link = document.createElement('a');
      link.href = url;
      link.download = `${form.data?.slug ?? 'form'}-${view}.csv`;
      document.body.append(link);
      link.click();
      link.remove();
      // Some browsers read the blob after the click returns: let it live a while, then free it.
      setTimeout(() => URL.revokeObjectURL(url), 30_000);
    });

  const stats = list.data?.stats;
  const counts: Record<View, string> = {
    inbox: stats ? `${stats.unread} unread` : '',
    archived: stats ? String(stats.archived) : '',
    spam: stats ? String(stats.spam) : '',
  };
  const pages = list.data?.pagination.total_pages ?? 1;

  return (
    <FormFrame siteId={siteId} form={form} section="submissions">
      <div class="views" role="group" aria-label="Submission views">
        {VIEWS.map(([key, label]) => (
          <button
            key={key}
            type="button"
            class={view === key ? '' : 'secondary'}
            aria-pressed={view === key}
            onClick={() => choose(key)}
          >
            {label}
            {counts[key] && <span class="count"> ({counts[key]})</span>}
          </button>
        ))}
      </div>
      <div class="row">
        <div class="field">
          <label for="sub-from">From day</label>
          <input
            id="sub-from"
            type="date"
            value={from}
            onChange={(e) => {
              setFrom(e.currentTarget.value);
              setPage(1);
            }}
          />
        </div>
        <div class="field">
          <label for="sub-to">To day</label>
          <input
            id="sub-to"
            type="date"
            value={to}
            onChange={(e) => {
              setTo(e.currentTarget.value);
              setPage(1);
            }}
          />
        </div>
        <button
          type="button"
          class="secondary"
          aria-disabled={exporting.busy}
          onClick={() => void exportCsv()}
        >
          {exporting.busy ? 'Exporting…' : 'Export this view as CSV'}
        </button>
      </div>
      <Alert error={list.error ?? exporting.error} />
      {open && form.data && (
        <SubmissionDetailPanel
          siteId={siteId}
          form={form.data}
          uuid={open}
          view={view}
          onChanged={list.reload}
          onClose={close}
        />
      )}
      {list.data && form.data && (
        <SubmissionTable
          form={form.data}
          rows={list.data.submissions}
          view={view}
          open={open}
          onOpen={setOpen}
        />
      )}
      {list.data && pages > 1 && (
        <nav class="row pager" aria-label="Pages">
          <button type="button" class="secondary" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            Previous page
          </button>
          <span aria-live="polite">
            Page {page} of {pages} ({list.data.pagination.total_items} submissions)
          </span>
          <button type="button" class="secondary" disabled={page >= pages} onClick={() => setPage(page + 1)}>
            Next page
          </button>
        </nav>
      )}
    </FormFrame>
  );
}

const EMPTY: Record<View, string> = {
  inbox: 'No submissions in the inbox.',
  archived: 'No archived submissions.',
  spam: 'The spam bin is empty.',
};

function SubmissionTable({
  form,
  rows,
  view,
  open,
  onOpen,
}: {
  form: Form;
  rows: Submission[];
  view: View;
  open: string | undefined;
  onOpen(uuid: string): void;
}) {
  if (rows.length === 0) return <p>{EMPTY[view]}</p>;
  const shown = form.fields.slice(0, 3);
  return (
    <div class="table-wrap forms-table">
      <table class="submissions">
        <thead>
          <tr>
            <th scope="col">State</th>
            {shown.map((field) => (
              <th key={field.id} scope="col">
                {field.label}
              </th>
            ))}
            <th scope="col">Submitted</th>
            {view === 'spam' && <th scope="col">Score</th>}
            <th scope="col">
              <span class="visually-hidden">Open</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr
              key={row.uuid}
              class={row.is_read ? 'read' : 'unread'}
              data-uuid={row.uuid}
              aria-current={open === row.uuid ? 'true' : undefined}
            >
              <td>{row.is_read ? 'Read' : <strong class="marker">Unread</strong>}</td>
              {shown.map((field) => (
                <td key={field.id} class="value">
                  {row.data[field.name] ?? ''}
                </td>
              ))}
              <td>{formatDate(row.submitted_at)}</td>
              {view === 'spam' && <td>{row.spam_score}</td>}
              <td>
                <button type="button" class="link" onClick={() => onOpen(row.uuid)}>
                  Open<span class="visually-hidden"> submission of {formatDate(row.submitted_at)}</span>
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
