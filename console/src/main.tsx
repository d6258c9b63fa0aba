import { render } from 'preact';
import { useCallback, useEffect, useMemo, useState } from 'preact/hooks';
import { messageOf } from './api.js';
import { match, to } from './links.js';
import { Link, navigate, usePath } from './router.js';
import { publicRoutes, signedInRoutes, type Route } from './routes.js';
import { AccountContext, loadMe, signOut, type AccountState, type Me } from './session.js';
import { watchTableScroll } from './ui/scroll-cue.js';
import { SudoDialog } from './ui/sudo-dialog.js';
import './styles.css';

function find(routes: Route[], path: string) {
  for (const route of routes) {
    const params = match(route.path, path);
    if (params) return { route, params };
  }
  return undefined;
}

function App() {
  const path = usePath();
  const [me, setMe] = useState<Me | undefined>();
  const [state, setState] = useState<'loading' | 'ready' | 'failed'>('loading');
  const [failure, setFailure] = useState<string>();

  const reload = useCallback(async () => {
    try {
      setMe(await loadMe());
      setState('ready');
    } catch (err) {
      setFailure(messageOf(err));
      setState('failed');
    }
  }, []);
  useEffect(() => void reload(), [reload]);

  const account = useMemo<AccountState | undefined>(
    () =>
      me && {
        me,
        reload,
        signOut: async () => {
          await signOut().catch(() => undefined);
          setMe(undefined);
          navigate(to.signIn(), { flash: 'You are signed out.' });
        },
      },
    [me, reload],
  );

  if (state === 'loading')
    return (
      <p class="loading" role="status">
        Loading…
      </p>
    );
  if (state === 'failed')
    return (
      <p class="alert alert-error" role="alert">
        {failure}
      </p>
    );

  const open = find(publicRoutes, path);
  if (open) {
    const Screen = open.route.screen;
    return (
      <main id="main" class="public">
        <Screen params={open.params} onSignedIn={reload} />
      </main>
    );
  }
  if (!account) {
    // Not signed in: the sign-in screen, coming back here afterwards (with the query: `?folder=`…).
    navigate(to.signIn(path + location.search), { replace: true });
    return null;
  }
  const found = find(signedInRoutes, path);
  const Screen = found?.route.screen ?? NotFound;
  return (
    <AccountContext.Provider value={account}>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link href={to.sites()} class="brand">
          Hostplane
        </Link>
        <nav aria-label="Console">
          <Link href={to.sites()}>Sites</Link>
          <Link href={to.account()}>Account</Link>
          <Link href={to.plans()}>Plans</Link>
          <a href="/docs">API docs</a>
        </nav>
        <span class="who">{account.me.email}</span>
        <button type="button" class="link" onClick={() => void account.signOut()}>
          Sign out
        </button>
      </header>
      <main id="main">
        <Screen params={found?.params ?? {}} onSignedIn={reload} />
      </main>
      <SudoDialog />
    </AccountContext.Provider>
  );
}

function NotFound() {
  return (
    <section class="page">
      <h1>Not found</h1>
      <p>
        There is no such page in the console. <Link href={to.sites()}>Back to your sites</Link>.
      </p>
    </section>
  );
}

render(<App />, document.getElementById('app')!);
watchTableScroll();
