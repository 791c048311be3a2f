// Sign-in through the server's own OAuth authorization server: the code
// flow with PKCE (S256) for the public client `pillbox-web`. The access
// token lives only in memory; the rotating refresh token is kept in
// localStorage so a reload stays signed in, and signing out revokes the
// session and clears everything this device kept.
import { sha256 } from './sha256.js';

const CLIENT_ID = 'pillbox-web';
const REFRESH_KEY = 'pillbox.refresh';
const PENDING_KEY = 'pillbox.oauth';
export const CALLBACK_PATH = '/app/oauth/callback';
const OAUTH = '/api/v1/oauth';

let access = null; // { token, expiresAt }
let refreshTimer = null;
const listeners = new Set();

export function onSignOut(fn) { listeners.add(fn); }

function redirectUri() { return location.origin + CALLBACK_PATH; }

function b64url(bytes) {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function randomString(n = 32) {
  const bytes = new Uint8Array(n);
  crypto.getRandomValues(bytes);
  return b64url(bytes);
}

// crypto.subtle exists only in secure contexts; a home server reached over
// plain http by its LAN name is not one, so the digest falls back to JS.
async function challengeOf(verifier) {
  const data = new TextEncoder().encode(verifier);
  if (globalThis.crypto && crypto.subtle) {
    return b64url(new Uint8Array(await crypto.subtle.digest('SHA-256', data)));
  }
  return b64url(sha256(data));
}

export async function startSignIn(returnTo) {
  location.assign(`${OAUTH}/authorize?${await signInRequest(returnTo)}`);
}

// The authorization request of a sign-in this tab then completes at the
// callback; the first-run set-up page sends it with its form, so the new
// owner comes back signed in.
export async function signInRequest(returnTo) {
  const verifier = randomString(48);
  const state = randomString(16);
  sessionStorage.setItem(PENDING_KEY, JSON.stringify({ verifier, state, returnTo: returnTo || '/app/' }));
  return new URLSearchParams({
    response_type: 'code',
    client_id: CLIENT_ID,
    redirect_uri: redirectUri(),
    state,
    code_challenge: await challengeOf(verifier),
    code_challenge_method: 'S256',
    scope: 'pillbox',
    device_label: deviceLabel(),
  });
}

function deviceLabel() {
  const ua = navigator.userAgent;
  const browser = /Firefox\//.test(ua) ? 'Firefox' : /Edg\//.test(ua) ? 'Edge' : /Chrom/.test(ua) ? 'Chrome' : /Safari\//.test(ua) ? 'Safari' : 'Browser';
  const system = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows' : /Linux/.test(ua) ? 'Linux' : '';
  return `Web app (${browser}${system ? ' on ' + system : ''})`;
}

async function tokenRequest(fields) {
  const response = await fetch(`${OAUTH}/token`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: CLIENT_ID, ...fields }),
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const error = new Error(body.error_description || body.error || 'sign-in failed');
    error.oauth = body.error || 'server_error';
    throw error;
  }
  keep(body);
  return body;
}

function keep(tokens) {
  access = { token: tokens.access_token, expiresAt: Date.now() + tokens.expires_in * 1000 };
  if (tokens.refresh_token) localStorage.setItem(REFRESH_KEY, tokens.refresh_token);
  clearTimeout(refreshTimer);
  // Silent refresh a minute before expiry (or halfway for short lifetimes).
  const lead = Math.min(60, tokens.expires_in / 2);
  refreshTimer = setTimeout(() => refresh().catch(() => {}), (tokens.expires_in - lead) * 1000);
}

// Finishes the redirect back from the sign-in page; returns the path the
// user was on, or throws with the server's error.
export async function completeSignIn() {
  const params = new URLSearchParams(location.search);
  const pending = JSON.parse(sessionStorage.getItem(PENDING_KEY) || 'null');
  sessionStorage.removeItem(PENDING_KEY);
  if (params.get('error')) throw new Error(params.get('error_description') || params.get('error'));
  if (!pending || params.get('state') !== pending.state) throw new Error('This sign-in answer does not belong to this tab; sign in again.');
  await tokenRequest({
    grant_type: 'authorization_code',
    code: params.get('code') || '',
    redirect_uri: redirectUri(),
    code_verifier: pending.verifier,
  });
  return pending.returnTo;
}

let refreshing = null;
// One refresh at a time: a second would present the rotated token and
// revoke the whole session.
export function refresh() {
  if (!refreshing) {
    const token = localStorage.getItem(REFRESH_KEY);
    if (!token) return Promise.reject(new Error('not signed in'));
    refreshing = tokenRequest({ grant_type: 'refresh_token', refresh_token: token })
      .catch((e) => {
        if (e.oauth === 'invalid_grant' || e.oauth === 'invalid_client') forget();
        throw e;
      })
      .finally(() => { refreshing = null; });
  }
  return refreshing;
}

export function hasSession() { return !!localStorage.getItem(REFRESH_KEY); }

export async function accessToken() {
  if (access && access.expiresAt - Date.now() > 10000) return access.token;
  await refresh();
  return access.token;
}

function forget() {
  access = null;
  clearTimeout(refreshTimer);
  localStorage.removeItem(REFRESH_KEY);
}

export async function signOut() {
  const token = localStorage.getItem(REFRESH_KEY);
  if (token) {
    await fetch(`${OAUTH}/revoke`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, client_id: CLIENT_ID }),
    }).catch(() => {});
  }
  forget();
  for (const fn of listeners) await fn();
}
