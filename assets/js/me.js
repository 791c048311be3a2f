// The member's own page: the larger-text setting, "remind me on this
// device" (Web Push with the server's VAPID key), the profile and avatar,
// sign-in sessions, linked identity-provider identities and TOTP enrolment.
import { html, useState, useEffect } from '../vendor/preact-htm.js';
import { get, hh, post, request, del, BASE } from './api.js';
import { accessToken } from './auth.js';
import { ErrorBox, Field, Loading, formValues, formatDateTime, applyLargeText } from './ui.js';

const RECEIVED_KEY = 'pillbox.reminders';

function b64ToBytes(text) {
  const padded = text.replace(/-/g, '+').replace(/_/g, '/') + '==='.slice((text.length + 3) % 4);
  return Uint8Array.from(atob(padded), (c) => c.charCodeAt(0));
}

export function receivedReminders() {
  try { return JSON.parse(localStorage.getItem(RECEIVED_KEY)) || []; } catch { return []; }
}

// The service worker tells open pages about each reminder it shows.
if ('serviceWorker' in navigator) {
  navigator.serviceWorker.addEventListener('message', (event) => {
    if (!event.data || event.data.type !== 'reminder') return;
    const list = [{ title: event.data.title, body: event.data.body, at: new Date().toISOString() }, ...receivedReminders()].slice(0, 20);
    localStorage.setItem(RECEIVED_KEY, JSON.stringify(list));
    dispatchEvent(new Event('pillbox-reminder'));
  });
}

function Reminders() {
  const [state, setState] = useState('unknown');
  const [error, setError] = useState(null);
  const [received, setReceived] = useState(receivedReminders());
  const supported = 'serviceWorker' in navigator && 'PushManager' in window;
  useEffect(() => {
    const update = () => setReceived(receivedReminders());
    addEventListener('pillbox-reminder', update);
    if (supported) navigator.serviceWorker.ready.then((r) => r.pushManager.getSubscription()).then((s) => setState(s ? 'on' : 'off')).catch(() => setState('off'));
    return () => removeEventListener('pillbox-reminder', update);
  }, []);
  const turnOn = async () => {
    try {
      const caps = await fetch(`${BASE}/capabilities`).then((r) => r.json());
      const key = caps.data.notifications && caps.data.notifications.web_push_vapid_public_key;
      if (!key) throw new Error('This server does not send Web Push reminders.');
      const registration = await navigator.serviceWorker.ready;
      const subscription = await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: b64ToBytes(key) });
      await post(hh('/push_subscription'), { push_subscription: subscription.toJSON() });
      setState('on');
      setError(null);
    } catch (e) { setError(e); }
  };
  const turnOff = async () => {
    try {
      const registration = await navigator.serviceWorker.ready;
      const subscription = await registration.pushManager.getSubscription();
      if (subscription) await subscription.unsubscribe();
      await del(hh('/push_subscription')).catch(() => {});
      setState('off');
    } catch (e) { setError(e); }
  };
  return html`<section aria-labelledby="reminders-h"><h2 id="reminders-h">Reminders</h2>
    ${!supported ? html`<p>This browser cannot receive reminders (Web Push needs https or localhost).</p>` : html`
      <div class="field inline"><input type="checkbox" id="remind-here" checked=${state === 'on'} onChange=${(e) => (e.currentTarget.checked ? turnOn() : turnOff())} />
      <label for="remind-here">Remind me on this device</label></div>
      ${state === 'on' && html`<button onClick=${() => post(hh('/push_subscription/test'), {}).catch(setError)}>Send a test reminder</button>`}`}
    <${ErrorBox} error=${error} />
    ${received.length > 0 && html`<h3>Received here</h3><ul>${received.map((r) => html`<li>${formatDateTime(r.at)}: ${r.title}${r.body ? ` — ${r.body}` : ''}</li>`)}</ul>`}
  </section>`;
}

// Every change to the second factor sends the account's password with it
// (the server asks for it each time); while enrolling, the password typed
// to start is kept in this component's memory only, to confirm with.
function Totp() {
  const [status, setStatus] = useState(null);
  const [enrolment, setEnrolment] = useState(null);
  const [codes, setCodes] = useState(null);
  const [error, setError] = useState(null);
  const load = () => get('/auth/mfa').then((r) => setStatus(r.data)).catch(setError);
  useEffect(() => { load(); }, []);
  const showCodes = (r) => { setError(null); setCodes(r.body.data.recovery_codes); load(); };
  if (!status) return error ? html`<${ErrorBox} error=${error} />` : null;
  return html`<section aria-labelledby="totp-h"><h2 id="totp-h">Second step at sign-in</h2>
    <${ErrorBox} error=${error} />
    ${codes ? html`<div class="notice"><p>Recovery codes: keep them somewhere safe. Each works once; they are shown only now.</p><ul>${codes.map((c) => html`<li class="token">${c}</li>`)}</ul><button onClick=${() => setCodes(null)}>Done</button></div>`
      : status.totp_enabled ? html`<p>An authenticator app is set up (${status.recovery_codes_remaining} recovery codes left). Turning it off, or on again, signs your other devices out.</p>
        <form onSubmit=${(e) => { const v = formValues(e); post('/auth/mfa/totp/disable', { mfa: { password: v.password, code: v.code } }).then(() => { setError(null); load(); }).catch(setError); }}>
          <${Field} id="totp-off-password" label="Password"><input id="totp-off-password" name="password" type="password" required autocomplete="current-password" /><//>
          <${Field} id="totp-off-code" label="Code or recovery code"><input id="totp-off-code" name="code" required autocomplete="one-time-code" /><//>
          <button type="submit">Turn off</button></form>
        <form onSubmit=${(e) => { const v = formValues(e); post('/auth/mfa/recovery_codes', { mfa: { password: v.password, code: v.code } }).then(showCodes).catch(setError); }}>
          <${Field} id="totp-new-password" label="Password"><input id="totp-new-password" name="password" type="password" required autocomplete="current-password" /><//>
          <${Field} id="totp-new-code" label="Code or recovery code"><input id="totp-new-code" name="code" required autocomplete="one-time-code" /><//>
          <button type="submit">New recovery codes</button></form>`
      : enrolment ? html`<p>Add this key to your authenticator app, then enter the code it shows.</p><p class="token">${enrolment.secret}</p>
        <form onSubmit=${(e) => { const v = formValues(e); post('/auth/mfa/totp/confirm', { mfa: { password: enrolment.password, code: v.code } }).then((r) => { setEnrolment(null); showCodes(r); }).catch(setError); }}>
          <${Field} id="totp-code" label="Code from the app"><input id="totp-code" name="code" required inputmode="numeric" autocomplete="one-time-code" /><//>
          <div class="actions"><button type="submit" class="primary">Confirm</button>
          <button type="button" onClick=${() => setEnrolment(null)}>Cancel</button></div></form>`
      : html`<p>Not set up.</p>
        <form onSubmit=${(e) => { const v = formValues(e); post('/auth/mfa/totp', { mfa: { password: v.password } }).then((r) => { setError(null); setEnrolment({ ...r.body.data, password: v.password }); }).catch(setError); }}>
          <${Field} id="totp-on-password" label="Password"><input id="totp-on-password" name="password" type="password" required autocomplete="current-password" /><//>
          <button type="submit">Set up an authenticator app</button></form>`}
  </section>`;
}

function Sessions() {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const load = () => get('/auth/sessions?per_page=100').then((r) => setList(r.data)).catch(setError);
  useEffect(() => { load(); }, []);
  return html`<section aria-labelledby="sessions-h"><h2 id="sessions-h">Signed-in devices</h2>
    <${ErrorBox} error=${error} />
    ${list && html`<ul class="cards">${list.map((s) => html`<li class="card"><div class="row"><span class="name">${s.device_label || s.client_id}</span>${s.current && html`<span class="tag taken">This device</span>`}</div>
      <p class="meta">Signed in ${formatDateTime(s.created_at)}${s.last_used_at ? ` · last used ${formatDateTime(s.last_used_at)}` : ''}</p>
      ${!s.current && html`<button onClick=${() => del(`/auth/sessions/${s.id}`).then(load).catch(setError)}>Sign out<span class="sr-only"> ${s.device_label || ''}</span></button>`}</li>`)}</ul>`}
  </section>`;
}

// Identities of the server's identity provider that sign in as this
// account: shown so that a link nobody here made is seen, and removable.
function LinkedIdentities() {
  const [list, setList] = useState(null);
  const [error, setError] = useState(null);
  const load = () => get('/auth/linked_identities?per_page=100').then((r) => setList(r.data)).catch(setError);
  useEffect(() => { load(); }, []);
  if (!error && (!list || list.length === 0)) return null;
  return html`<section aria-labelledby="linked-h"><h2 id="linked-h">Linked sign-ins</h2>
    <p>These identities of your identity provider sign in to this account without your password.</p>
    <${ErrorBox} error=${error} />
    ${list && html`<ul class="cards">${list.map((l) => html`<li class="card"><div class="row"><span class="name">${l.name}</span></div>
      <p class="meta">${l.issuer} · linked ${formatDateTime(l.linked_at)} · last used ${formatDateTime(l.last_used_at)}</p>
      <button onClick=${() => del(`/auth/linked_identities/${l.id}`).then(load).catch(setError)}>Unlink<span class="sr-only"> ${l.name}</span></button></li>`)}</ul>`}
  </section>`;
}

function Profile() {
  const [profile, setProfile] = useState(null);
  const [avatar, setAvatar] = useState(null);
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  const load = async () => {
    try {
      const p = (await get(hh('/profile'))).data;
      setProfile(p);
      if (p.has_avatar) {
        const r = await fetch(`${BASE}${hh('/profile/avatar')}`, { headers: { Authorization: `Bearer ${await accessToken()}` } });
        if (r.ok) setAvatar(URL.createObjectURL(await r.blob()));
      } else setAvatar(null);
    } catch (e) { setError(e); }
  };
  useEffect(() => { load(); }, []);
  if (!profile) return error ? html`<${ErrorBox} error=${error} />` : html`<${Loading} />`;
  return html`<section aria-labelledby="profile-h"><h2 id="profile-h">Profile</h2>
    <${ErrorBox} error=${error} />
    ${saved && html`<p class="notice" role="status">Saved.</p>`}
    <p><strong>${profile.name}</strong> · ${profile.email || ''}</p>
    ${avatar && html`<img src=${avatar} alt="Your picture" width="96" height="96" />`}
    <form onSubmit=${(e) => { const v = formValues(e); request('PATCH', hh('/profile'), { body: { profile: { date_of_birth: v.date_of_birth || null, time_zone: v.time_zone || null } } }).then(() => { setSaved(true); setError(null); load(); }).catch(setError); }}>
      <${Field} id="pr-dob" label="Date of birth"><input id="pr-dob" name="date_of_birth" type="date" value=${profile.date_of_birth || ''} /><//>
      <${Field} id="pr-tz" label="Your time zone (optional)"><input id="pr-tz" name="time_zone" value=${profile.time_zone || ''} /><//>
      <button type="submit">Save profile</button>
    </form>
    <form onSubmit=${(e) => { e.preventDefault(); const data = new FormData(e.currentTarget); request('PUT', hh('/profile/avatar'), { form: data }).then(() => { setError(null); load(); }).catch(setError); }}>
      <${Field} id="pr-avatar" label="Picture (PNG, JPEG or WebP)"><input id="pr-avatar" name="avatar" type="file" accept="image/png,image/jpeg,image/webp" required /><//>
      <div class="actions"><button type="submit">Upload picture</button>
      ${profile.has_avatar && html`<button type="button" onClick=${() => del(hh('/profile/avatar')).then(load).catch(setError)}>Remove picture</button>`}</div>
    </form>
  </section>`;
}

export function Me() {
  const [large, setLarge] = useState(document.documentElement.classList.contains('large'));
  return html`
    <h1>You</h1>
    <section aria-labelledby="display-h"><h2 id="display-h">Display</h2>
      <div class="field inline"><input type="checkbox" id="large-text" checked=${large} onChange=${(e) => { applyLargeText(e.currentTarget.checked); setLarge(e.currentTarget.checked); }} />
      <label for="large-text">Larger text</label></div>
    </section>
    <${Reminders} />
    <${Profile} />
    <${Sessions} />
    <${LinkedIdentities} />
    <${Totp} />`;
}
