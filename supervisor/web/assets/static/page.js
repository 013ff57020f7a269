// cicy-agent's page script: follows the team's event stream, swaps in the
// page's live part (rendered by the server, every text escaped there), and
// sends the page's actions to the same API the CLI uses. No inline code, no
// eval: the page's CSP is script-src 'self'.
'use strict';
(function () {
  const csrf = document.querySelector('meta[name="cicy-csrf"]').content;
  const page = document.body.dataset.page;
  const paneID = document.body.dataset.pane || '';
  const flash = document.getElementById('flash');
  const conn = document.getElementById('conn');

  function say(text, bad) {
    flash.textContent = text;
    flash.className = 'flash ' + (bad ? 'err' : 'ok');
    flash.hidden = false;
  }

  // call sends a changing request with the CSRF token; a refusal is thrown
  // with the API's sentence.
  async function call(method, path, body) {
    const init = { method, credentials: 'same-origin', headers: { 'X-Cicy-CSRF': csrf } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await fetch(path, init);
    const text = await res.text();
    let doc = null;
    try { doc = text ? JSON.parse(text) : null; } catch (e) { doc = null; }
    if (!res.ok) {
      if (doc && doc.error) throw new Error(doc.error);
      if (res.status === 401 || res.status === 403) throw new Error('refused (' + res.status + '): the browser session ended or the page is stale; reload it, or open a new link from cicy-agent web --url');
      throw new Error(res.status + ' ' + (text || res.statusText));
    }
    return doc;
  }

  // The live part: fetched again after events, one fetch at a time, never
  // while someone types in it.
  const live = document.getElementById('live');
  let busy = false, dirty = false;
  function partURL() {
    const u = new URL(location.href);
    u.hash = '';
    u.searchParams.set('part', 'live');
    return u.toString();
  }
  function typing() {
    const a = document.activeElement;
    return live && a && live.contains(a) && a.matches('input, textarea, select');
  }
  async function refresh() {
    dirty = true;
    if (busy || !live) return;
    busy = true;
    try {
      while (dirty) {
        if (typing()) break;
        dirty = false;
        const res = await fetch(partURL(), { credentials: 'same-origin', cache: 'no-store' });
        if (!res.ok) break;
        const html = await res.text();
        const open = new Set([...live.querySelectorAll('details[open][data-diff]')].map(d => d.dataset.diff));
        live.innerHTML = html;
        for (const d of live.querySelectorAll('details[data-diff]')) {
          if (open.has(d.dataset.diff)) { d.open = true; loadDiff(d); }
        }
        document.dispatchEvent(new CustomEvent('cicy:updated'));
      }
    } catch (e) {
      dirty = true;
    } finally {
      busy = false;
    }
    // A CLI agent that waits before its dialog is drawn (its hook comes
    // first) changes no state when the dialog appears: look again.
    if (live.querySelector('[data-pending]')) {
      clearTimeout(pending);
      pending = setTimeout(refresh, 700);
    }
  }
  let pending;
  if (live) live.addEventListener('focusout', () => { if (dirty) setTimeout(refresh, 0); });

  // follow reads an NDJSON stream line by line, and opens it again when it
  // ends (after 0.5 s, doubling to 10 s while it keeps failing).
  async function follow(url, onDoc, onState) {
    let delay = 500;
    for (;;) {
      try {
        const res = await fetch(url, { credentials: 'same-origin', cache: 'no-store' });
        if (res.ok && res.body) {
          onState(true);
          delay = 500;
          const reader = res.body.getReader();
          const dec = new TextDecoder();
          let buf = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += dec.decode(value, { stream: true });
            let i;
            while ((i = buf.indexOf('\n')) >= 0) {
              const line = buf.slice(0, i).trim();
              buf = buf.slice(i + 1);
              if (!line) continue;
              let doc;
              try { doc = JSON.parse(line); } catch (e) { continue; }
              onDoc(doc);
            }
          }
        } else if (res.status === 401 || res.status === 403) {
          onState(false, 'logged out');
        }
      } catch (e) { /* the connection dropped: open it again */ }
      onState(false);
      await new Promise(r => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  function setConn(on, why) {
    conn.textContent = on ? 'live' : (why || 'reconnecting…');
    conn.className = 'conn ' + (on ? 'on' : 'off');
  }

  // concerns says whether an event changes what this page shows.
  function concerns(ev) {
    if (page === 'team' || ev.type === 'snapshot') return true;
    const t = ev.task;
    if (page === 'tasks') return !!t || ev.type === 'summary';
    const id = ev.id || (ev.pane && ev.pane.id) || '';
    return id === paneID || (!!t && (t.to === paneID || t.from === paneID));
  }

  function onEvent(ev) {
    if (ev.type === 'state' && ev.state) {
      // The fast path: a state shown in the page changes at once.
      for (const el of document.querySelectorAll('[data-pane="' + CSS.escape(ev.id) + '"] > .row > .state')) {
        el.textContent = ev.state.state;
        el.className = 'state s-' + ev.state.state;
      }
    }
    if (concerns(ev)) refresh();
  }

  // The pane page's screen follows the pane's preview stream: each
  // preview fetches the screen with its colours (at most 4 a second) and
  // draws its runs as spans with classes (as palette.go), text as text.
  const screen = document.getElementById('screen');
  let shooting = false, shootAgain = false, plain = null;
  function onScreen(doc) {
    if (typeof doc.screen !== 'string') return;
    plain = doc.screen;
    if (shooting) { shootAgain = true; return; }
    shoot();
  }
  async function shoot() {
    shooting = true;
    do {
      shootAgain = false;
      let doc = null;
      try {
        const res = await fetch('/api/panes/' + enc(paneID) + '/screen?styled=1&lines=' + (screen.dataset.lines || 60), { credentials: 'same-origin', cache: 'no-store' });
        if (res.ok) doc = await res.json();
      } catch (e) { doc = null; }
      draw(doc && doc.styled ? doc.styled : null, doc ? doc.screen : plain);
      await new Promise(r => setTimeout(r, 250));
    } while (shootAgain);
    shooting = false;
  }
  function draw(lines, text) {
    const atEnd = screen.scrollTop + screen.clientHeight >= screen.scrollHeight - 4;
    if (!lines) {
      screen.textContent = text || '';
    } else {
      const f = document.createDocumentFragment();
      lines.forEach((runs, i) => {
        if (i) f.append('\n');
        for (const r of runs) {
          const c = runClass(r);
          if (!c) { f.append(r.t); continue; }
          const s = document.createElement('span');
          s.className = c;
          s.textContent = r.t;
          f.append(s);
        }
      });
      screen.replaceChildren(f);
    }
    if (atEnd) screen.scrollTop = screen.scrollHeight;
  }
  function palRGB(i) {
    if (i < 232) { const L = [0, 95, 135, 175, 215, 255]; i -= 16; return [L[i / 36 | 0], L[(i / 6 | 0) % 6], L[i % 6]]; }
    const g = 8 + 10 * (i - 232); return [g, g, g];
  }
  function palIndex(c) {
    if (!c) return -1;
    if (c[0] !== '#') { const n = Number(c); return Number.isInteger(n) && n >= 0 && n <= 255 ? n : -1; }
    if (!/^#[0-9a-f]{6}$/i.test(c)) return -1;
    const v = parseInt(c.slice(1), 16), r = v >> 16, g = v >> 8 & 255, b = v & 255;
    let best = 16, bd = Infinity;
    for (let i = 16; i < 256; i++) {
      const p = palRGB(i), d = (p[0] - r) ** 2 + (p[1] - g) ** 2 + (p[2] - b) ** 2;
      if (d < bd) { bd = d; best = i; }
    }
    return best;
  }
  function runClass(r) {
    let fg = palIndex(r.fg), bg = palIndex(r.bg);
    const c = [];
    if (r.r) {
      [fg, bg] = [bg, fg];
      if (fg < 0) c.push('rf');
      if (bg < 0) c.push('rb');
    }
    if (fg >= 0) c.push('fg-' + fg);
    if (bg >= 0) c.push('bg-' + bg);
    if (r.b) c.push('bo');
    if (r.i) c.push('it');
    if (r.u) c.push('ul');
    return c.join(' ');
  }

  // Actions: buttons with data-act. One with data-confirm asks once more:
  // the first tap arms it (its label says what it will do), a second tap
  // within 5 s does it.
  const acts = {
    answer: b => call('POST', '/api/panes/' + enc(b.dataset.pane) + '/answer', { action: b.dataset.action })
      .then(r => b.dataset.pane + ': ' + r.action + ' sent' + (r.keys && r.keys.length ? ' (' + r.keys.join(' ') + ')' : '') + '; now ' + r.state),
    restart: b => call('POST', '/api/panes/' + enc(b.dataset.pane) + '/restart').then(() => b.dataset.pane + ' restarted'),
    kill: b => call('DELETE', '/api/panes/' + enc(b.dataset.pane))
      .then(r => b.dataset.pane + ' killed' + (r && r.kept ? '; its work was kept in ' + r.kept : '')),
    merge: b => call('POST', '/api/merge', { target: b.dataset.target }).then(mergeText),
    sendback: b => call('POST', '/api/merge', { target: b.dataset.target, send_back: true }).then(mergeText),
    cancel: b => call('POST', '/api/tasks/' + enc(b.dataset.task) + '/cancel').then(t => 'task #' + t.id + ' ' + t.status),
  };

  function mergeText(m) {
    if (m.sent_back) return m.branch + ' conflicts with ' + m.into + ' in ' + m.conflicts.join(', ') + '; nothing was changed. Sent back to ' + m.sent_back.to + ' as task #' + m.sent_back.id + '.';
    if (m.conflicts && m.conflicts.length) throw new Error(m.branch + ' conflicts with ' + m.into + ' in ' + m.conflicts.join(', ') + '; nothing was changed (Send back gives the worker the rebase)');
    if (m.already) return m.branch + ' is already in ' + m.into;
    return 'merged ' + m.branch + ' into ' + m.into + (m.fast_forward ? ' (fast-forward)' : ' (merge commit)');
  }

  function enc(s) { return encodeURIComponent(s || ''); }

  function disarm(b) {
    if (!b.dataset.armed) return;
    b.textContent = b.dataset.label;
    delete b.dataset.armed;
  }

  document.addEventListener('click', async e => {
    const b = e.target.closest('button[data-act]');
    if (!b || b.disabled) return;
    const act = acts[b.dataset.act];
    if (!act) return;
    if (b.dataset.confirm && !b.dataset.armed) {
      b.dataset.armed = '1';
      b.dataset.label = b.textContent;
      b.textContent = b.dataset.confirm;
      setTimeout(() => disarm(b), 5000);
      return;
    }
    disarm(b);
    b.disabled = true;
    try {
      say(await act(b), false);
    } catch (err) {
      say(err.message, true);
    } finally {
      b.disabled = false;
      refresh();
    }
  });

  // Forms: data-form names what the form does.
  const forms = {
    send: (f, d) => call('POST', '/api/panes/' + enc(f.dataset.pane) + '/send', { text: d.get('text') })
      .then(() => 'sent to ' + f.dataset.pane),
    dispatch: (f, d) => call('POST', '/api/tasks', { to: d.get('to').trim(), text: d.get('text') })
      .then(t => 'task #' + t.id + ' ' + t.status + ' for ' + t.to),
    budget: (f, d) => {
      const raw = String(d.get('budget_usd')).trim().replace(/^\$/, '');
      const v = raw === '' || raw === 'none' ? null : Number(raw);
      if (v !== null && !(v > 0)) return Promise.reject(new Error('a budget is an amount of dollars above 0, like 1.50; leave it empty to remove it'));
      return call('PUT', '/api/budgets/' + enc(f.dataset.ref), { budget_usd: v })
        .then(r => r.budget_usd === null ? 'no budget for ' + r.name : 'budget of ' + r.name + ' set to $' + r.budget_usd);
    },
    role: (f, d) => call('PUT', '/api/memory/templates/agent/' + enc(f.dataset.pane), { content: d.get('content') })
      .then(g => g.filename + ' saved'),
  };

  document.addEventListener('submit', async e => {
    const f = e.target.closest('form[data-form]');
    if (!f || !forms[f.dataset.form]) return;
    e.preventDefault();
    const btn = f.querySelector('button[type=submit]');
    if (btn) btn.disabled = true;
    try {
      say(await forms[f.dataset.form](f, new FormData(f)), false);
      if (f.dataset.form === 'send' || f.dataset.form === 'dispatch') {
        for (const el of f.querySelectorAll('textarea, input[name=text]')) el.value = '';
      }
    } catch (err) {
      say(err.message, true);
    } finally {
      if (btn) btn.disabled = false;
      refresh();
    }
  });

  // A diff is fetched when its <details> is first opened.
  async function loadDiff(d) {
    const body = d.querySelector('.diffbody');
    if (!body || d.dataset.loaded) return;
    d.dataset.loaded = '1';
    try {
      const res = await fetch('/tasks?part=diff&target=' + enc(d.dataset.diff), { credentials: 'same-origin' });
      body.innerHTML = await res.text();
    } catch (err) {
      body.textContent = 'the diff could not be read: ' + err.message;
      delete d.dataset.loaded;
    }
  }
  document.addEventListener('toggle', e => {
    const d = e.target;
    if (d.matches && d.matches('details[data-diff]') && d.open) loadDiff(d);
  }, true);

  follow('/api/events', onEvent, setConn);
  if (screen && paneID) {
    follow('/api/panes/' + enc(paneID) + '/preview?lines=' + (screen.dataset.lines || 60), onScreen, () => {});
    screen.scrollTop = screen.scrollHeight;
  }
})();
