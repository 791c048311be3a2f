// The public API, as a phone uses it: bearer token, the error envelope
// kept whole so pages can show the server's own words, one retry after a
// silent refresh when a token has just expired.
import { accessToken, refresh } from './auth.js';

export const BASE = '/api/v1';
let householdId = null;

export function setHousehold(id) { householdId = id; }
export function household() { return householdId; }
export function hh(path) { return `/households/${householdId}${path}`; }

export class ApiError extends Error {
  constructor(status, envelope) {
    const error = (envelope && envelope.error) || {};
    super(error.message || `The server answered ${status}.`);
    this.status = status;
    this.code = error.code || 'error';
    this.errors = error.errors || {};
  }
}

// Thrown when the server cannot be reached at all (offline, stopped).
export class Unreachable extends Error {
  constructor() { super('The server cannot be reached.'); }
}

export async function request(method, path, { body, headers = {}, form } = {}) {
  const send = async (token) => {
    const init = { method, headers: { Accept: 'application/json', Authorization: `Bearer ${token}`, ...headers } };
    if (form) init.body = form;
    else if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    try {
      return await fetch(BASE + path, init);
    } catch {
      throw new Unreachable();
    }
  };
  let token;
  try { token = await accessToken(); } catch (e) { if (e instanceof TypeError) throw new Unreachable(); throw e; }
  let response = await send(token);
  if (response.status === 401) {
    await refresh();
    response = await send(await accessToken());
  }
  const text = await response.text();
  const json = text ? safeJson(text) : null;
  if (!response.ok) throw new ApiError(response.status, json);
  return { status: response.status, body: json, etag: response.headers.get('ETag') };
}

function safeJson(text) { try { return JSON.parse(text); } catch { return null; } }

export const get = (path) => request('GET', path).then((r) => r.body);
export const post = (path, body, headers) => request('POST', path, { body, headers });
export const patch = (path, body, headers) => request('PATCH', path, { body, headers });
export const put = (path, body, headers) => request('PUT', path, { body, headers });
export const del = (path, headers) => request('DELETE', path, { headers });

// Every page of a collection (households are small; 100 per page).
export async function all(path) {
  const out = [];
  for (let page = 1; page < 50; page++) {
    const sep = path.includes('?') ? '&' : '?';
    const body = await get(`${path}${sep}page=${page}&per_page=100`);
    out.push(...body.data);
    const total = (body.meta && body.meta.total_count) ?? 0;
    if (body.data.length < 100 || out.length >= total) break;
  }
  return out;
}

export function uuid() {
  if (crypto.randomUUID) return crypto.randomUUID();
  const b = new Uint8Array(16);
  crypto.getRandomValues(b);
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}
