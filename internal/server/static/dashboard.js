// trueup dashboard: live updates. Every page works without this file; with it, the page
// follows GET /api/v1/watch (Server-Sent Events), updates phase badges at once, and re-fetches
// itself (at most every two seconds) to swap in the regions marked data-live. Nothing from an
// event is ever parsed as HTML: text goes in with textContent, and swapped regions come from
// this server's own escaped pages.
(function () {
  'use strict';

  var PHASES = {
    Ready: ['ready', '\u2713'], Failed: ['failed', '\u2715'], Reconciling: ['reconciling', '\u21bb'],
    Pending: ['pending', '\u25cb'], Deleting: ['deleting', '\u232b']
  };
  var MIN_GAP_MS = 2000;
  var RETRY_MS = 15000;

  var watch = document.body.getAttribute('data-watch') || '';
  var watchURL = document.body.getAttribute('data-watch-url') || '/api/v1/watch';
  var live = document.getElementById('live');
  var lastFetch = 0, timer = null, inflight = false, dirty = false;

  function relTime(t, now) {
    var s = Math.round((now - t) / 1000), future = s < 0;
    if (future) s = -s;
    var out;
    if (s < 5) return 'just now';
    if (s < 60) out = s + ' s';
    else if (s < 3600) out = Math.floor(s / 60) + ' min';
    else if (s < 48 * 3600) out = Math.floor(s / 3600) + ' h';
    else out = Math.floor(s / 86400) + ' days';
    return future ? 'in ' + out : out + ' ago';
  }

  function tickTimes() {
    var now = Date.now();
    document.querySelectorAll('time[data-rel]').forEach(function (el) {
      var t = Date.parse(el.getAttribute('datetime'));
      if (!isNaN(t)) el.textContent = relTime(t, now);
    });
  }

  function setState(state, text) {
    if (!live) return;
    live.hidden = false;
    live.setAttribute('data-state', state);
    live.textContent = text;
  }

  function keyOf(d) {
    return (d.namespace || '') + '/' + String(d.kind || '').toLowerCase() + '/' + (d.name || '');
  }

  function badge(phase) {
    var p = PHASES[phase] || ['unknown', '?'];
    var outer = document.createElement('span');
    outer.className = 'phase phase-' + p[0] + ' updated';
    var icon = document.createElement('span');
    icon.className = 'icon';
    icon.setAttribute('aria-hidden', 'true');
    icon.textContent = p[1];
    outer.appendChild(icon);
    outer.appendChild(document.createTextNode(phase));
    return outer;
  }

  function setPhase(key, phase) {
    document.querySelectorAll('[data-phase-for]').forEach(function (el) {
      if (el.getAttribute('data-phase-for') === key) el.replaceChildren(badge(phase));
    });
  }

  function relevant(object, d) {
    if (watch === '*') return true;
    if (watch.indexOf('resource:') === 0) return object === 'resource' && keyOf(d) === watch.slice(9);
    if (watch.indexOf('source:') === 0) {
      var name = watch.slice(7);
      return d.source === name || (object === 'source' && d.name === name);
    }
    return false;
  }

  function schedule() {
    dirty = true;
    if (timer || inflight || document.hidden) return;
    timer = setTimeout(refresh, Math.max(0, lastFetch + MIN_GAP_MS - Date.now()));
  }

  function refresh() {
    timer = null;
    if (!dirty) return;
    dirty = false;
    inflight = true;
    lastFetch = Date.now();
    fetch(location.href, { headers: { Accept: 'text/html' }, credentials: 'same-origin', cache: 'no-store' })
      .then(function (r) {
        if (r.status === 404) { setState('down', 'Gone: refresh'); return null; }
        if (!r.ok) throw new Error('status ' + r.status);
        return r.text();
      })
      .then(function (html) {
        if (html !== null) swap(new DOMParser().parseFromString(html, 'text/html'));
      })
      .catch(function () { setState('down', 'Update failed'); })
      .then(function () {
        inflight = false;
        if (dirty) schedule();
      });
  }

  // swap replaces each live region by its fresh copy, keeping keyboard focus on the same link.
  function swap(doc) {
    document.querySelectorAll('[data-live][id]').forEach(function (el) {
      var fresh = doc.getElementById(el.id);
      if (!fresh) return;
      var active = document.activeElement, href = null;
      if (active && el.contains(active)) href = active.getAttribute('href');
      var node = document.importNode(fresh, true);
      el.replaceWith(node);
      if (href) {
        var again = node.querySelector('[href="' + CSS.escape(href) + '"]');
        if (again) again.focus();
      }
    });
    var asof = document.getElementById('asof'), fresh = doc.getElementById('asof');
    if (asof && fresh) {
      asof.setAttribute('datetime', fresh.getAttribute('datetime'));
      asof.textContent = fresh.textContent;
    }
    if (doc.title) document.title = doc.title;
  }

  function parse(e) {
    try { return JSON.parse(e.data); } catch (err) { return null; }
  }

  function connect() {
    var es = new EventSource(watchURL);
    setState('connecting', 'Connecting\u2026');
    es.onopen = function () { setState('live', 'Live'); };
    es.onerror = function () {
      if (es.readyState === EventSource.CLOSED) {
        setState('down', 'Live updates off');
        setTimeout(connect, RETRY_MS);
      } else {
        setState('connecting', 'Reconnecting\u2026');
      }
    };
    es.addEventListener('resource', function (e) {
      var d = parse(e);
      if (!d) return;
      if (d.phase && d.type !== 'DELETED') setPhase(keyOf(d), String(d.phase));
      if (relevant('resource', d)) schedule();
    });
    es.addEventListener('source', function (e) {
      var d = parse(e);
      if (d && relevant('source', d)) schedule();
    });
    es.addEventListener('reset', function () { if (watch) schedule(); });
  }

  setInterval(tickTimes, 30000);
  document.addEventListener('visibilitychange', function () {
    if (!document.hidden && dirty) schedule();
  });
  if (window.EventSource && window.fetch && window.DOMParser && watch) connect();
})();
