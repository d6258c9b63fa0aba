import { useState } from 'preact/hooks';
import { fragmentParam } from '../router.js';

/**
 * The token of a mailed link (`#token=…`), read once; the fragment is then dropped from the
 * address bar so that the token does not stay in the history or a shared screenshot.
 */
export function useMailedToken(): string | undefined {
  const [token] = useState(() => {
    const value = fragmentParam('token');
    if (value) history.replaceState(history.state, '', location.pathname + location.search);
    return value;
  });
  return token;
}
