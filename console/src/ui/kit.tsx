import type { ComponentChildren, InputHTMLAttributes } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from '../api.js';
import { usePath } from '../router.js';

/** A screen: sets the document title and moves focus to its heading when the screen changes, so a screen reader hears it. */
export function Page({
  title,
  actions,
  children,
}: {
  title: string;
  actions?: ComponentChildren;
  children?: ComponentChildren;
}) {
  const heading = useRef<HTMLHeadingElement>(null);
  const path = usePath();
  useEffect(() => {
    document.title = `${title} · Hostplane`;
  }, [title]);
  // Once per screen: a title that fills in later (the site's name arriving) must not pull the
  // focus back from where a keyboard user has moved on to.
  useEffect(() => heading.current?.focus(), [path]);
  return (
    <section class="page" aria-labelledby="page-title">
      <header class="page-header">
        <h1 id="page-title" tabIndex={-1} ref={heading}>
          {title}
        </h1>
        {actions && <div class="page-actions">{actions}</div>}
      </header>
      {children}
    </section>
  );
}

/** What went wrong, in the API's words; announced by screen readers. */
export function Alert({ error, kind = 'error' }: { error: unknown; kind?: 'error' | 'success' | 'info' }) {
  if (error === undefined || error === null || error === '') return null;
  const text = typeof error === 'string' ? error : messageOf(error);
  return (
    <p class={`alert alert-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {text}
    </p>
  );
}

type InputProps = InputHTMLAttributes<HTMLInputElement> & {
  label: string;
  name: string;
  hint?: string;
  type?: string;
  value?: string;
  required?: boolean;
  autoComplete?: string;
};

/** A labelled input; the hint is tied to it for screen readers. */
export function Field({ label, name, hint, ...input }: InputProps) {
  const id = `field-${name}`;
  return (
    <div class="field">
      <label for={id}>{label}</label>
      <input id={id} name={name} aria-describedby={hint ? `${id}-hint` : undefined} {...input} />
      {hint && (
        <small id={`${id}-hint`} class="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** A bar of used against limit (null: unlimited), with the numbers in words beside it. */
export function UsageBar({
  label,
  used,
  limit,
  format = String,
}: {
  label: string;
  used: number;
  limit: number | null;
  format?: (n: number) => string;
}) {
  const ratio = limit ? Math.min(1, used / limit) : 0;
  const level = ratio >= 0.9 ? 'high' : ratio >= 0.7 ? 'mid' : 'low';
  return (
    <div class="usage">
      <div class="usage-label">
        <span>{label}</span>
        <span>
          {format(used)} {limit === null ? '(unlimited)' : `of ${format(limit)}`}
        </span>
      </div>
      <div
        class={`usage-bar usage-${level}`}
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={limit ?? undefined}
        aria-valuenow={used}
        aria-valuetext={`${format(used)} ${limit === null ? 'used, unlimited' : `of ${format(limit)}`}`}
      >
        <span style={{ width: `${(ratio * 100).toFixed(1)}%` }} />
      </div>
    </div>
  );
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

export const formatDate = (iso: string | null | undefined) =>
  iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';

export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload(): Promise<void>;
}

/** Loads data for a screen; `reload` after a change. Stale answers of an earlier load are dropped. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  const run = useCallback(load, deps);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((old) => ({ ...old, loading: true }));
    try {
      const data = await run();
      if (mine === generation.current) setState({ data, loading: false });
    } catch (error) {
      if (mine === generation.current) setState((old) => ({ data: old.data, error, loading: false }));
    }
  }, [run]);
  useEffect(() => void reload(), [reload]);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/**
 * Runs an action with a busy flag and its error kept for an Alert; a second run while one is under
 * way is ignored. Buttons show `busy` with aria-disabled, not disabled: a disabled button drops the
 * keyboard focus to the page's top the moment it is pressed.
 */
export function useAction() {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const running = useRef(false);
  const run = useCallback(async <T,>(action: () => Promise<T>): Promise<T | undefined> => {
    if (running.current) return undefined;
    running.current = true;
    setBusy(true);
    setError(undefined);
    try {
      return await action();
    } catch (err) {
      setError(err);
      return undefined;
    } finally {
      running.current = false;
      setBusy(false);
    }
  }, []);
  return { busy, error, setError, run };
}

/**
 * A value the user copies (a key shown once, an embed snippet), with a copy button. It says
 * "Copied" only when the clipboard took it: on plain HTTP away from localhost the browser has no
 * clipboard API, and a key shown once must not look copied when it is not.
 */
export function Secret({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState<boolean>();
  const area = useRef<HTMLTextAreaElement>(null);
  const copy = async () => {
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      area.current?.focus();
      area.current?.select();
      setCopied(false);
    }
  };
  return (
    <div class="secret">
      <label>
        {label}
        <textarea
          ref={area}
          readOnly
          rows={Math.min(12, value.split('\n').length)}
          value={value}
          onFocus={(e) => e.currentTarget.select()}
        />
      </label>
      <button type="button" class="secondary" onClick={copy}>
        {copied ? 'Copied' : 'Copy'}
      </button>
      <span class="hint" role="status">
        {copied === false
          ? 'The browser did not allow copying: the text is selected, press Ctrl+C (⌘C on a Mac).'
          : ''}
      </span>
    </div>
  );
}
