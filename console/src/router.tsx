import type { AnchorHTMLAttributes, ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';

/** The console lives under /console; the API serves index.html for every path below it. */
export const BASE = '/console';

const listeners = new Set<() => void>();
const notify = () => listeners.forEach((listener) => listener());
window.addEventListener('popstate', notify);

/** A confirmation for the next screen (a site deleted, signed out): said once, where the owner lands. */
let flash: string | undefined;
/** Takes the confirmation left for this screen, if any (it is said once). */
export function takeFlash(): string | undefined {
  const taken = flash;
  flash = undefined;
  return taken;
}

export function navigate(
  to: string,
  { replace = false, flash: said }: { replace?: boolean; flash?: string } = {},
): void {
  if (said !== undefined) flash = said;
  const url = to.startsWith(BASE) ? to : BASE + to;
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  notify();
}

/** A value read from the address, read again (and re-rendering) on every navigation. */
function useAddress<T>(read: () => T): T {
  const [value, setValue] = useState(read);
  useEffect(() => {
    const update = () => setValue(read);
    listeners.add(update);
    // A navigation between the first render and this effect would otherwise go unseen.
    update();
    return () => void listeners.delete(update);
  }, []);
  return value;
}

/** The path below /console ("/" for the console's home), re-rendering on navigation. */
export const usePath = (): string => useAddress(current);

/**
 * One parameter of the address's query (`?folder=…`), re-rendering on navigation: a link to the
 * same screen with another query (or none) changes it, as do back and forward.
 */
export const useQueryParam = (name: string): string | undefined =>
  useAddress(() => new URLSearchParams(location.search).get(name) ?? undefined);

function current(): string {
  const path = location.pathname.startsWith(BASE) ? location.pathname.slice(BASE.length) : location.pathname;
  return path === '' ? '/' : path.replace(/\/+$/, '') || '/';
}

/** A token passed in the URL's fragment by a mailed link (`#token=…`): never sent to a server. */
export function fragmentParam(name: string): string | undefined {
  return new URLSearchParams(location.hash.slice(1)).get(name) ?? undefined;
}

type AnchorProps = AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; children?: ComponentChildren };

/** An in-console link: a real <a href> (opens in a new tab, keyboard-usable) that navigates in place. */
export function Link({ href, children, ...rest }: AnchorProps) {
  const onClick = (event: MouseEvent) => {
    // A modified click (new tab, new window, download) or a link to another window is the browser's.
    const modified = event.metaKey || event.ctrlKey || event.shiftKey || event.altKey;
    if (event.defaultPrevented || event.button !== 0 || modified || (rest.target ?? '_self') !== '_self')
      return;
    event.preventDefault();
    navigate(href);
  };
  return (
    <a href={BASE + href} onClick={onClick} {...rest}>
      {children}
    </a>
  );
}
