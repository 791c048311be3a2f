// The service worker: keeps the app shell and this build's files so the
// app opens without the network. API answers are never cached here
// (health data); the app keeps the last loaded day itself.
const BUILD = '{{v}}';
const CACHE = `pillbox-${BUILD}`;
const SHELL = '/app/';
const FILES = [SHELL, '/favicon.svg', '/manifest.webmanifest', '/icon-192.png',
  `${BUILD}/index.css`, `${BUILD}/vendor/preact-htm.js`,
  ...['main', 'api', 'auth', 'sha256', 'offline', 'ui', 'today', 'medicines', 'people', 'admin', 'me'].map((m) => `${BUILD}/js/${m}.js`)];

self.addEventListener('install', (event) => {
  event.waitUntil(caches.open(CACHE).then((cache) => cache.addAll(FILES)).then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(caches.keys()
    .then((keys) => Promise.all(keys.filter((k) => k.startsWith('pillbox-') && k !== CACHE).map((k) => caches.delete(k))))
    .then(() => self.clients.claim()));
});

self.addEventListener('fetch', (event) => {
  const url = new URL(event.request.url);
  if (event.request.method !== 'GET' || url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
  if (event.request.mode === 'navigate' && (url.pathname === '/' || url.pathname.startsWith('/app'))) {
    // The shell from the network when it answers (a new build), else the kept one.
    event.respondWith(fetch(event.request).catch(() => caches.match(SHELL)));
    return;
  }
  event.respondWith(caches.match(event.request).then((hit) => hit || fetch(event.request)));
});

self.addEventListener('push', (event) => {
  let message = { title: 'Pillbox', body: '' };
  try { message = { ...message, ...event.data.json() }; } catch { if (event.data) message.body = event.data.text(); }
  event.waitUntil(Promise.all([
    self.registration.showNotification(message.title, { body: message.body, icon: '/icon-192.png', tag: message.tag }),
    self.clients.matchAll({ type: 'window' }).then((clients) => clients.forEach((c) => c.postMessage({ type: 'reminder', title: message.title, body: message.body }))),
  ]));
});

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  event.waitUntil(self.clients.matchAll({ type: 'window' }).then((clients) => (clients.length ? clients[0].focus() : self.clients.openWindow('/app/today'))));
});
