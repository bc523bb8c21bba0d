// The web app at /app (docs/web-app.md): sign-in, the header with the
// workspace picker and the pages' navigation, and the page of the address.
import { useEffect, useState } from 'preact/hooks';
import { client, describe, email, loadWorkspaces, session, signedOutReason, signIn, signOut, unwrap, workspace, workspaces, chooseWorkspace } from './lib/api.ts';
import { navigate, onLinkClick, route } from './lib/router.ts';
import { notice, Notice } from './lib/ui.tsx';
import { CalendarPage } from './pages/calendar.tsx';
import { ChannelsPage } from './pages/channels.tsx';
import { ComposePage } from './pages/compose.tsx';
import { ApprovalsPage } from './pages/approvals.tsx';
import { SettingsPage } from './pages/settings.tsx';

const PAGES = [
  { path: '/app', label: 'Calendar' },
  { path: '/app/compose', label: 'Compose' },
  { path: '/app/channels', label: 'Channels' },
  { path: '/app/approvals', label: 'Approvals' },
  { path: '/app/settings', label: 'Settings' },
] as const;

function current(pathname: string) {
  const p = pathname.replace(/\/+$/, '') || '/app';
  if (p === '/app') return '/app';
  return PAGES.find((x) => x.path !== '/app' && (p === x.path || p.startsWith(`${x.path}/`)))?.path ?? '/app';
}

function SignIn() {
  const [mode, setMode] = useState<'signin' | 'signup'>('signin');
  const [error, setError] = useState<string | null>(signedOutReason.value);
  const [busy, setBusy] = useState(false);
  const submit = async (ev: Event) => {
    ev.preventDefault();
    const data = new FormData(ev.currentTarget as HTMLFormElement);
    const get = (k: string) => String(data.get(k) ?? '');
    setBusy(true);
    setError(null);
    try {
      if (mode === 'signup') {
        await unwrap(client.value.POST('/v1/auth/signup', {
          body: { email: get('email'), password: get('password'), organizationName: get('organizationName'), workspaceName: get('workspaceName') },
        }));
      }
      await signIn(get('email'), get('password'));
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form id="signin" class="card signin" onSubmit={submit} aria-labelledby="signin-h">
      <h1 id="signin-h">{mode === 'signin' ? 'Sign in' : 'Create an account'}</h1>
      <label>Email <input name="email" type="email" autocomplete="username" required /></label>
      <label>Password <input name="password" type="password" autocomplete={mode === 'signin' ? 'current-password' : 'new-password'} required minLength={mode === 'signup' ? 8 : undefined} /></label>
      {mode === 'signup' && (
        <>
          <label>Organization <input name="organizationName" required maxLength={200} /></label>
          <label>First workspace <input name="workspaceName" required maxLength={200} /></label>
        </>
      )}
      <button type="submit" disabled={busy}>{mode === 'signin' ? 'Sign in' : 'Create account'}</button>
      <p class="error" role="alert" hidden={!error}>{error}</p>
      <button type="button" class="link" onClick={() => { setMode(mode === 'signin' ? 'signup' : 'signin'); setError(null); }}>
        {mode === 'signin' ? 'No account yet? Create one' : 'Have an account? Sign in'}
      </button>
    </form>
  );
}

function Header() {
  const here = current(route.value.pathname);
  return (
    <header class="bar">
      <strong class="brand">Pressroom</strong>
      {session.value && (
        <nav aria-label="Pages">
          <ul class="nav">
            {PAGES.map((p) => (
              <li key={p.path}><a href={p.path} aria-current={here === p.path ? 'page' : undefined}>{p.label}</a></li>
            ))}
          </ul>
        </nav>
      )}
      <span class="spacer" />
      {session.value && workspaces.value.length > 0 && (
        <label class="ws-pick">
          <span class="sr-only">Workspace</span>
          <select id="workspace" value={workspace.value?.id} onChange={(e) => { chooseWorkspace((e.currentTarget as HTMLSelectElement).value); notice.value = null; }}>
            {workspaces.value.map((w) => <option key={w.id} value={w.id}>{`${w.name} (${w.role})`}</option>)}
          </select>
        </label>
      )}
      {session.value && <span id="who" class="who">{email.value}</span>}
      {session.value && <button id="signout" type="button" onClick={() => void signOut()}>Sign out</button>}
    </header>
  );
}

function Page() {
  const url = route.value;
  const here = current(url.pathname);
  const w = workspace.value;
  if (!w) return <p class="card">This account has no workspace yet.</p>;
  // Each page is keyed by the workspace, so switching workspaces starts it afresh.
  switch (here) {
    case '/app/compose': {
      const id = /^\/app\/compose\/([0-9a-f-]{36})\/?$/i.exec(url.pathname)?.[1] ?? null;
      return <ComposePage key={`${w.id}:${id ?? 'new'}`} contentId={id} />;
    }
    case '/app/channels': return <ChannelsPage key={w.id} />;
    case '/app/approvals': return <ApprovalsPage key={w.id} />;
    case '/app/settings': return <SettingsPage key={w.id} />;
    default: return <CalendarPage key={w.id} />;
  }
}

export function App() {
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const token = session.value;
  useEffect(() => {
    if (!token) return;
    setLoaded(false);
    loadWorkspaces().then(() => setLoaded(true), (e) => { setError(describe(e)); setLoaded(true); });
  }, [token]);
  useEffect(() => {
    const page = PAGES.find((p) => p.path === current(route.value.pathname));
    document.title = `${page?.label ?? 'Pressroom'} · Pressroom`;
  }, [route.value]);
  return (
    <div onClick={(ev) => {
      // A link to another page leaves the last page's notice behind.
      const before = location.pathname;
      onLinkClick(ev);
      if (location.pathname !== before) notice.value = null;
    }}>
      <Header />
      <main>
        {!token ? <SignIn /> : !loaded ? <p aria-busy="true">Loading…</p> : error ? <p class="notice error" role="alert">Could not load: {error}</p> : (
          <>
            <Notice />
            <Page />
          </>
        )}
      </main>
    </div>
  );
}

export { navigate };
