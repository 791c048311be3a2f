// The Pillbox web app: a client of the public API like the phone app.
// Views are paths under /app/ (deep links load the same shell); titles and
// paths never carry medical text.
import { html, render, useState, useEffect } from '../vendor/preact-htm.js';
import { CALLBACK_PATH, completeSignIn, hasSession, startSignIn, signOut, onSignOut } from './auth.js';
import { all, setHousehold, Unreachable } from './api.js';
import { clearAll, flush, startFlushing, pending, onQueueChange } from './offline.js';
import { ErrorBox, Loading, LARGE_TEXT_KEY, setTimeZone } from './ui.js';
import { Today } from './today.js';
import { Medicines } from './medicines.js';
import { People } from './people.js';
import { Admin } from './admin.js';
import { Me } from './me.js';

const HOUSEHOLD_KEY = 'pillbox.household';

const VIEWS = [
  { path: 'today', title: 'Today', component: Today },
  { path: 'medicines', title: 'Medicines', component: Medicines },
  { path: 'people', title: 'People', component: People },
  { path: 'admin', title: 'Household', component: Admin, admin: true },
  { path: 'me', title: 'You', component: Me },
];

function currentView() {
  const rest = location.pathname.replace(/^\/app\/?/, '').split('/')[0];
  return VIEWS.find((v) => v.path === rest) || VIEWS[0];
}

export function navigate(path) {
  history.pushState(null, '', path);
  dispatchEvent(new PopStateEvent('popstate'));
}

function SignedOut({ error }) {
  useEffect(() => { document.title = 'Sign in · Pillbox'; }, []);
  return html`<main id="main" class="page">
    <h1><img src="/favicon.svg" alt="" width="40" height="40" /> Pillbox</h1>
    <p>Your household's medicines, doses and stock.</p>
    <${ErrorBox} error=${error} />
    <button class="primary" id="sign-in" onClick=${() => startSignIn(location.pathname === CALLBACK_PATH ? '/app/' : location.pathname)}>Sign in</button>
  </main>`;
}

function App() {
  const [phase, setPhase] = useState('loading');
  const [error, setError] = useState(null);
  const [households, setHouseholds] = useState([]);
  const [current, setCurrent] = useState(null);
  const [view, setView] = useState(currentView());
  const [queued, setQueued] = useState(0);

  useEffect(() => {
    const onPop = () => setView(currentView());
    addEventListener('popstate', onPop);
    onSignOut(async () => { clearAll(); setPhase('signed_out'); });
    start();
    return () => removeEventListener('popstate', onPop);
  }, []);

  const start = async () => {
    try {
      if (location.pathname === CALLBACK_PATH) {
        const back = await completeSignIn();
        history.replaceState(null, '', back);
        setView(currentView());
      }
      if (!hasSession()) { setPhase('signed_out'); return; }
      let list;
      try {
        list = await all('/auth/households');
        localStorage.setItem('pillbox.households', JSON.stringify(list));
      } catch (e) {
        if (!(e instanceof Unreachable)) throw e;
        // Offline start: the households and day kept from the last visit.
        list = JSON.parse(localStorage.getItem('pillbox.households') || '[]');
      }
      setHouseholds(list);
      const kept = Number(localStorage.getItem(HOUSEHOLD_KEY));
      choose(list.find((h) => h.id === kept) || list[0] || null);
      setPhase('ready');
      startFlushing();
      flush().catch(() => {});
    } catch (e) {
      setError(e);
      setPhase(hasSession() ? 'error' : 'signed_out');
    }
  };

  const choose = (h) => {
    setCurrent(h);
    if (!h) return;
    setHousehold(h.id);
    setTimeZone(h.time_zone);
    localStorage.setItem(HOUSEHOLD_KEY, String(h.id));
    setQueued(pending().length);
  };
  useEffect(() => onQueueChange((items) => setQueued(items.length)), []);

  useEffect(() => { document.title = `${view.title} · Pillbox`; }, [view]);

  if (phase === 'loading') return html`<main id="main" class="page"><${Loading} /></main>`;
  if (phase === 'signed_out') return html`<${SignedOut} error=${error} />`;
  if (phase === 'error') return html`<main id="main" class="page"><h1>Pillbox</h1><${ErrorBox} error=${error} /><button onClick=${() => signOut()}>Sign out</button></main>`;
  if (!current) return html`<main id="main" class="page"><h1>Pillbox</h1><p>Your account has no household yet.</p><button onClick=${() => signOut()}>Sign out</button></main>`;

  const manager = current.role === 'owner' || current.role === 'administrator';
  const views = VIEWS.filter((v) => !v.admin || manager);
  const View = view.admin && !manager ? Today : view.component;
  return html`
    <a class="skip" href="#main">Skip to content</a>
    <header class="bar"><div class="inner">
      <a class="brand" href="/app/today" onClick=${(e) => { e.preventDefault(); navigate('/app/today'); }}>Pillbox</a>
      ${households.length > 1 && html`<div class="field inline"><label for="household-switch">Household</label>
        <select id="household-switch" value=${current.id} onChange=${(e) => { choose(households.find((h) => h.id === Number(e.currentTarget.value))); }}>
          ${households.map((h) => html`<option value=${h.id}>${h.name}</option>`)}
        </select></div>`}
      <nav class="tabs" aria-label="Main"><ul>
        ${views.map((v) => html`<li><a href=${`/app/${v.path}`} aria-current=${v === view ? 'page' : undefined}
          onClick=${(e) => { e.preventDefault(); navigate(`/app/${v.path}`); }}>${v.title}</a></li>`)}
      </ul></nav>
      <button class="link on-bar" onClick=${() => signOut()}>Sign out</button>
    </div></header>
    <main id="main">
      ${queued > 0 && view.path !== 'today' && html`<p class="pending" role="status">Waiting to send: ${queued}</p>`}
      <${View} key=${`${current.id}-${view.path}`} household=${current} />
    </main>
    <footer class="foot"><p>Pillbox · <a href="/api/v1/openapi.json">API description</a></p></footer>`;
}

if (localStorage.getItem(LARGE_TEXT_KEY)) document.documentElement.classList.add('large');
if ('serviceWorker' in navigator) navigator.serviceWorker.register('/sw.js').catch(() => {});
const root = document.getElementById('app');
root.textContent = '';
render(html`<${App} />`, root);
