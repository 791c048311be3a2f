// The first-run set-up page: fills in what the browser knows better than
// the server (its time zone, the address it opened the page at) on the
// form's first showing, and adds the web app's sign-in request so that
// the new owner lands in the app signed in.
import { signInRequest } from './auth.js';

async function prepare() {
  const form = document.getElementById('setup');
  if (!form) return;
  if (form.hasAttribute('data-detect')) {
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone;
    const timeZone = document.getElementById('time_zone');
    if (zone && timeZone) timeZone.value = zone;
    const address = document.getElementById('public_url');
    if (address) address.value = location.origin;
  }
  const request = await signInRequest('/app/');
  for (const [name, value] of request) {
    const field = document.createElement('input');
    field.type = 'hidden';
    field.name = name;
    field.value = value;
    form.append(field);
  }
}

if (document.readyState === 'loading') {
  document.addEventListener('DOMContentLoaded', prepare);
} else {
  prepare();
}
