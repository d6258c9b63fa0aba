import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import { call, forgetSiteKeys, runBeforeSignOut, setCsrfToken } from './api.js';

interface Limited {
  used: number;
  limit: number | null;
}

/** GET /api/v1/account: who is signed in, the plan, and usage against every limit. */
export interface Me {
  email: string;
  email_verified: boolean;
  created_at: string;
  plan: { type: string; name: string };
  usage: {
    sites: Array<{ id: number; slug: string; files: Limited; storage_bytes: Limited }>;
    forms: Limited;
    submissions_this_month: Limited & { resets_at: string };
    sqlite_databases: Limited;
    sqlite_database_bytes: { largest: number; limit: number | null };
    sqlite_users_per_database: { largest: number; limit: number | null };
  };
  upgrade_url: string;
  signup: 'invite' | 'open';
  /** Whether this server sends mail: without it, no screen promises one. */
  mail: boolean;
  csrf_token?: string;
}

export interface AccountState {
  me: Me;
  /** Reads the account again (after a change of plan, sites or usage). */
  reload(): Promise<void>;
  signOut(): Promise<void>;
}

export const AccountContext = createContext<AccountState | undefined>(undefined);

/** The signed-in account; screens below the sign-in gate only. */
export function useAccount(): AccountState {
  const state = useContext(AccountContext);
  if (!state) throw new Error('useAccount outside the signed-in console');
  return state;
}

/** The account of the cookie session, or undefined when there is none (401). */
export async function loadMe(): Promise<Me | undefined> {
  try {
    const me = await call<Me>('GET', '/api/v1/account');
    setCsrfToken(me.csrf_token);
    return me;
  } catch (err) {
    if ((err as { status?: number }).status === 401) return undefined;
    throw err;
  }
}

export async function signOut(): Promise<void> {
  try {
    await runBeforeSignOut();
    await call('POST', '/api/v1/account/sign-out');
  } finally {
    setCsrfToken(undefined);
    forgetSiteKeys();
  }
}
