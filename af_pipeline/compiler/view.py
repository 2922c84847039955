"""Views for people: one self-contained HTML page per day, and one per ISO week.

Pure functions of documents: the same documents give the same bytes, so a day's view.html is
published and certified like its other files. Each page carries its own CSS and a few lines of
JavaScript written here; it loads nothing (a Content-Security-Policy forbids any fetch), uses
only fonts every Debian chromium has (DejaVu Sans), and never shows typed text.

The day page: a timeline per monitor stream (frames as bars coloured by app or by inferred
category, interruptions as ticks, capture gaps hatched as unknown time, each frame's
presence-only share striped, never drawn as idleness; time away from the screen (the afk
watcher's, from the document) as labelled "away" spans), the app / domain / category ledgers as
bars (minutes on one timeline first), the context block, and each frame's evidence on click.
The week page: a heatmap of minutes on screen by hour and day, totals per app, domain and
category against the previous week, the top routines, and links to each day.
"""

from __future__ import annotations

import hashlib
import html
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from af_pipeline.compiler import categories, emit
from af_pipeline.compiler.document import decode_refs, strip_typed_text
from capture import timeutil

_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
            "#9c755f", "#86bcb6")
_GREY = "#9aa0a6"
_DAY_S = 86_400

_CSS = """
*{box-sizing:border-box}[hidden]{display:none!important}
:root{color-scheme:light dark;--fg:#1f2328;--mu:#57606a;--bg:#fff;--bg2:#f6f8fa;--ln:#d0d7de;--ln2:#eaeef2;--ac:#0969da}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--mu:#9da7b3;--bg:#0d1117;--bg2:#161b22;--ln:#30363d;--ln2:#21262d;
 --ac:#4493f8}}
body{margin:0;overflow-x:hidden;font:14px/1.4 "DejaVu Sans",sans-serif;color:var(--fg);background:var(--bg)}
header,main{max-width:1200px;margin:0 auto;padding:8px 16px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}h3{font-size:14px;margin:4px 0}
.sum{color:var(--mu);margin:2px 0}.tier2{color:#8250df;font-size:12px}
a{color:var(--ac)}
nav.days{display:flex;flex-wrap:wrap;gap:4px 16px;font-size:13px}nav.days span{color:var(--mu)}
fieldset{border:0;padding:0;margin:6px 0}legend{float:left;margin-right:8px}
.tlbar{display:flex;flex-wrap:wrap;align-items:center;gap:4px;margin:0 0 4px 96px;font-size:12px}
.tlbar button{min-width:32px;min-height:28px;font:inherit;color:var(--fg);background:var(--bg2);border:1px solid var(--ln);
 border-radius:4px;cursor:pointer}
#tlwin{color:var(--mu);margin-left:6px}
.axis{position:relative;height:18px;margin-left:96px;font-size:11px;color:var(--mu);overflow:hidden}
.axis span{position:absolute;transform:translateX(-50%);white-space:nowrap}
.rows{touch-action:pan-y;user-select:none}
.stream{display:flex;align-items:center;margin:4px 0}
.sname{width:96px;flex:none;font-size:12px;overflow-wrap:anywhere;padding-right:4px}
.track{position:relative;flex:1;height:34px;background:var(--bg2);border:1px solid var(--ln);border-radius:4px;overflow:clip;
 overflow-clip-margin:4px}
.pres .track{height:22px}.pres .note{font-size:11px;line-height:20px;padding-left:6px;color:var(--mu)}
.grid{position:absolute;inset:0;pointer-events:none}.hl{position:absolute;top:0;bottom:0;width:1px;background:var(--ln)}
.gap{position:absolute;top:0;bottom:0;background:repeating-linear-gradient(45deg,#8c959f66 0 3px,transparent 3px 7px)}
.frame,.grp{position:absolute;top:3px;bottom:3px;min-width:8px;padding:0;border:0;border-radius:3px;cursor:pointer;
 background:var(--ca);overflow:hidden;color:#fff;text-align:left}
.grp{background:repeating-linear-gradient(90deg,#57606a 0 3px,#8c959f 3px 6px);font-size:11px;text-align:center;
 text-shadow:0 0 2px #000}
.fl{display:none;padding:0 4px;font-size:11px;line-height:28px;white-space:nowrap;overflow:hidden;text-overflow:ellipsis;
 text-shadow:0 0 2px #000}
.frame.wide .fl{display:block}
body.by-cat .frame{background:var(--cc)}
.kc,body.by-cat .ka{display:none}body.by-cat .kc{display:inline}
.frame:focus-visible,.grp:focus-visible,.away:focus-visible,.frame[aria-pressed=true]{outline:3px solid var(--fg);
 outline-offset:1px;z-index:2}
.po{position:absolute;left:0;bottom:0;height:40%;background:repeating-linear-gradient(90deg,rgba(255,255,255,.75) 0 2px,transparent 2px 4px)}
.away{position:absolute;top:0;bottom:0;overflow:hidden;font-size:11px;line-height:20px;text-align:center;color:var(--mu);
 border:1px dashed #8c959f;border-radius:3px;background:repeating-linear-gradient(-45deg,var(--ln2) 0 4px,var(--bg) 4px 8px)}
.sw.away{position:static;line-height:normal;border-width:1px}
.tick{position:absolute;top:-3px;width:2px;height:8px;background:var(--fg);pointer-events:none}
.keys{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:6px 0 0 96px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
.sw.gap{position:static;background:repeating-linear-gradient(45deg,#8c959f 0 2px,#fff 2px 4px)}
.sw.grp{position:static;min-width:0}
#detail{overflow-wrap:anywhere;border:1px solid var(--ln);border-radius:6px;padding:8px 12px;min-height:64px}
#detail ul{margin:2px 0 6px;padding-left:18px}#detail dl{display:grid;grid-template-columns:max-content 1fr;gap:0 10px;margin:4px 0}
#detail dt{color:var(--mu)}#detail dd{margin:0}
.refs{font:12px "DejaVu Sans Mono",monospace;overflow-wrap:anywhere}
#flist{list-style:none;padding:0;margin:4px 0}#flist li{margin:2px 0}
.fi{display:block;width:100%;min-height:40px;padding:4px 8px;font:inherit;font-size:13px;text-align:left;color:var(--fg);
 background:var(--bg2);border:1px solid var(--ln);border-left:6px solid var(--ca);border-radius:4px;cursor:pointer;
 overflow-wrap:anywhere}
.fi[aria-pressed=true]{outline:3px solid var(--fg)}.fi .m{color:var(--mu);font-size:12px}
#q{width:100%;max-width:420px;min-height:32px;font:inherit;padding:2px 6px;color:var(--fg);background:var(--bg);
 border:1px solid var(--ln);border-radius:4px}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:0 24px}
.bar{margin:6px 0;font-size:12px}
.bar .n{display:block;overflow-wrap:anywhere}.bar .v{display:block;color:var(--mu);font-size:11px}
.bar .b{display:block;position:relative;height:10px;background:var(--bg2);border-radius:2px}
.bar .pm{position:absolute;left:0;top:0;bottom:0;background:var(--ln);border-radius:2px}
.bar .tl{position:absolute;left:0;top:0;bottom:0;background:#4e79a7;border-radius:2px}
pre{white-space:pre-wrap;word-break:break-word;font:11px/1.35 "DejaVu Sans Mono",monospace;background:var(--bg2);padding:8px;
 border-radius:6px}
.heat table{border-collapse:collapse;font-size:11px;width:100%;table-layout:fixed}
.heat td{height:24px;border:1px solid var(--bg);text-align:center;color:var(--fg);overflow:hidden}
.heat th{font-weight:normal;color:var(--mu);padding:0 2px;text-align:left;overflow:hidden}
.heat thead th{text-align:center}.heat th.dn{width:76px}
table.tot{border-collapse:collapse;font-size:12px;width:100%}
table.tot td,table.tot th{padding:2px 6px;border-bottom:1px solid var(--ln2);text-align:right}
table.tot td:first-child,table.tot th:first-child{text-align:left;overflow-wrap:anywhere}
.up{color:#1a7f37}.down{color:#cf222e}
@media (max-width:600px){.sname{width:64px}.axis,.keys,.tlbar{margin-left:64px}header,main{padding:6px 8px}
 .heat td{font-size:0;height:20px}.heat thead th{font-size:0}.heat thead th.h3{font-size:9px}.heat th.dn{width:58px}}
"""

# The timeline is laid out again by this script on every zoom or pan: frames narrower than
# MIN_PX at the current zoom are drawn as one group button (Enter or a click zooms into it);
# each row is one Tab stop whose arrows move along it (roving tabindex); +/- zoom, Shift+arrows
# pan, 0 shows the whole day; wheel zooms, drag pans, two fingers pinch. Links to other days come
# from days.js (published/days.js, or af serve's /days.js): a published day's bytes never name
# another day. The colour switch only toggles a class.
_JS = """
(() => {
const d = document, $$ = (s, r) => [...(r || d).querySelectorAll(s)];
const MIN_PX = 8, MIN_SPAN = 60;
const p2 = n => String(n).padStart(2, '0');
const hm = s => p2(Math.floor(s / 3600)) + ':' + p2(Math.floor(s % 3600 / 60));
const hms = s => hm(s) + ':' + p2(Math.floor(s % 60));
function show(id) {
  $$('.frame,.fi').forEach(x => x.setAttribute('aria-pressed', String(!!id && x.dataset.f === id)));
  $$('.fd').forEach(a => { a.hidden = a.id !== 'd-' + id; });
  d.getElementById('hint').hidden = !!id;
}
d.addEventListener('keydown', e => { if (e.key === 'Escape') show(null); });
$$('input[name=colorby]').forEach(r => r.addEventListener('change', () =>
  d.body.classList.toggle('by-cat', r.value === 'cat' && r.checked)));
// the list of frames, and the search over it (titles, sites, pages, clicks: the panels' text)
$$('.fi').forEach(b => b.addEventListener('click', () => {
  show(b.dataset.f); const a = d.getElementById('d-' + b.dataset.f); if (a) a.focus();
}));
const q = d.getElementById('q'), fl = d.getElementById('fl');
if (q) q.addEventListener('input', () => {
  const words = q.value.toLowerCase().split(/\\s+/).filter(Boolean);
  let n = 0;
  $$('#flist li').forEach(li => {
    const b = li.firstElementChild, a = d.getElementById('d-' + b.dataset.f);
    const text = li.dataset.t || (li.dataset.t = (b.textContent + ' ' + (a ? a.textContent : '')).toLowerCase());
    li.hidden = !words.every(w => text.includes(w)); n += li.hidden ? 0 : 1;
  });
  if (words.length) fl.open = true;
  d.getElementById('qn').textContent = words.length ? n + ' frame' + (n === 1 ? '' : 's') + ' match' : '';
});
// links to the other days, from the list kept outside the day's folder
const A = window.AF_DAYS, nav = d.getElementById('nav');
if (A && nav) {
  const day = nav.dataset.day, days = A.days || [];
  const at = (p, v) => p ? new URL(p.split('{}').join(v), A.base).href : null;
  const prev = days.filter(x => x < day).pop(), next = days.find(x => x > day);
  const item = (text, href, rel) => {
    const el = d.createElement(href ? 'a' : 'span'); el.textContent = text;
    if (href) { el.href = href; if (rel) el.rel = rel; }
    nav.appendChild(el);
  };
  item(prev ? '\\u2190 ' + prev : 'no earlier day', prev && at(A.day, prev), 'prev');
  item('week ' + nav.dataset.week, at(A.week, nav.dataset.week));
  item('all days', at(A.index, ''));
  item(next ? next + ' \\u2192' : 'no later day', next && at(A.day, next), 'next');
  nav.hidden = false;
}
frames();
function frames() {
  $$('.frame').forEach(b => b.addEventListener('click', () => show(b.dataset.f)));
  const tl = d.getElementById('tl');
  if (!tl) return;
  const LO = +tl.dataset.lo, HI = +tl.dataset.hi, tracks = $$('.track', tl), area = tl.querySelector('.rows');
  const axis = tl.querySelector('.axis'), win = d.getElementById('tlwin');
  let t0 = LO, t1 = HI;
  const mid = el => (+el.dataset.a + +(el.dataset.b || el.dataset.a)) / 2;
  const items = tr => $$('.frame:not([hidden]),.grp,.away:not([hidden])', tr);
  tracks.forEach(tr => { tr.cur = LO; });
  function layout() {
    const span = t1 - t0, W = tracks.length ? tracks[0].clientWidth || 1 : 1;
    const had = d.activeElement && d.activeElement.closest ? d.activeElement.closest('.track') : null;
    const steps = [60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600];
    const step = steps.find(s => s / span * W >= 64) || 21600;
    let ax = '', grid = '';
    for (let t = Math.ceil(t0 / step) * step; t <= t1; t += step) {
      const x = (t - t0) / span * 100;
      ax += '<span style="left:' + x + '%">' + hm(t) + '</span>';
      grid += '<i class="hl" style="left:' + x + '%"></i>';
    }
    axis.innerHTML = ax;
    win.textContent = hms(t0) + '\\u2013' + hms(t1) + ' (' + (span >= 3600 ? (span / 3600).toFixed(1) + ' h' :
      Math.round(span / 60) + ' min') + ')';
    tl.dataset.view = t0 + ' ' + t1;
    const place = (el, a, b) => {
      el.style.left = (a - t0) / span * 100 + '%';
      if (b !== null) el.style.width = (b - a) / span * 100 + '%';
    };
    tracks.forEach(tr => {
      const w = tr.clientWidth || W, px = s => s / span * w;
      tr.querySelector('.grid').innerHTML = grid;
      $$('.grp', tr).forEach(g => g.remove());
      $$('.gap,.away,.tick', tr).forEach(el => {
        const a = +el.dataset.a, b = el.dataset.b === undefined ? null : +el.dataset.b;
        el.hidden = (b === null ? a : b) < t0 || a > t1;
        if (!el.hidden) place(el, a, b);
      });
      let run = [], end = -Infinity;
      const flush = () => {
        if (run.length > 1) {
          const a = +run[0].dataset.a, g = d.createElement('button');
          g.type = 'button'; g.className = 'grp'; g.tabIndex = -1; g.dataset.a = a; g.dataset.b = end;
          g.textContent = run.length;
          g.title = run.length + ' frames ' + hms(a) + '\\u2013' + hms(end) + ', too small to pick at this zoom: Enter or click zooms in';
          g.setAttribute('aria-label', g.title);
          place(g, a, end); run.forEach(f => { f.hidden = true; });
          tr.insertBefore(g, run[0]);
        } else if (run.length) run[0].hidden = false;
        run = []; end = -Infinity;
      };
      $$('.frame', tr).forEach(f => {
        const a = +f.dataset.a, b = +f.dataset.b;
        if (b < t0 || a > t1) { flush(); f.hidden = true; return; }
        place(f, a, b);
        const fw = px(b - a);
        f.classList.toggle('wide', fw >= 72);
        if (fw >= MIN_PX) { flush(); f.hidden = false; return; }
        if (run.length && px(a - end) > MIN_PX) flush();
        run.push(f); end = Math.max(end, b);
      });
      flush();
      rove(tr, had === tr);
    });
  }
  // one Tab stop per row: the item nearest the row's current time
  function rove(tr, focus) {
    $$('.frame,.grp,.away', tr).forEach(el => { el.tabIndex = -1; });
    let best = null, dist = Infinity;
    items(tr).forEach(el => {
      const a = +el.dataset.a, b = +(el.dataset.b || el.dataset.a);
      const dd = tr.cur < a ? a - tr.cur : tr.cur > b ? tr.cur - b : 0;
      if (dd < dist) { dist = dd; best = el; }
    });
    if (best) { best.tabIndex = 0; if (focus) best.focus({preventScroll: true}); }
    return best;
  }
  function view(a, b) {
    const span = Math.min(HI - LO, Math.max(MIN_SPAN, b - a));
    a = Math.min(Math.max(LO, (a + b) / 2 - span / 2), HI - span);
    t0 = a; t1 = a + span; layout();
  }
  function zoom(f, at) {
    const span = t1 - t0, ns = Math.min(HI - LO, Math.max(MIN_SPAN, span * f));
    if (at === undefined) at = (t0 + t1) / 2;
    const a = at - (at - t0) * ns / span;
    view(a, a + ns);
  }
  const pan = ds => view(t0 + ds, t1 + ds);
  const into = g => { const a = +g.dataset.a, b = +g.dataset.b, pad = Math.max(30, (b - a) * 0.1); view(a - pad, b + pad); };
  function go(tr, el) {
    tr.cur = mid(el); rove(tr, true);
    if (el.classList.contains('frame')) show(el.dataset.f);
  }
  function step(tr, el, dir) {
    let list = items(tr), j = list.indexOf(el) + dir;
    if (j >= 0 && j < list.length) return go(tr, list[j]);
    const c = mid(el), span = t1 - t0;
    if ((dir > 0 && t1 >= HI) || (dir < 0 && t0 <= LO)) return;
    pan(dir * span * 0.8); list = items(tr);
    const next = dir > 0 ? list.find(x => mid(x) > c) : list.reverse().find(x => mid(x) < c);
    if (next) go(tr, next);
  }
  tl.addEventListener('click', e => {
    const g = e.target.closest('.grp');
    if (!g) return;
    const tr = g.closest('.track'); tr.cur = +g.dataset.a; into(g);
    const first = items(tr).find(x => mid(x) >= +g.dataset.a);
    if (first) { tr.cur = mid(first); rove(tr, true); }
  });
  tl.addEventListener('keydown', e => {
    const el = e.target.closest ? e.target.closest('.frame,.grp,.away') : null, tr = el && el.closest('.track');
    const at = el ? mid(el) : undefined, k = e.key;
    if (tr) tr.cur = at;
    if (k === '+' || k === '=') zoom(0.5, at);
    else if (k === '-' || k === '_') zoom(2, at);
    else if (k === '0') view(LO, HI);
    else if (e.shiftKey && (k === 'ArrowLeft' || k === 'ArrowRight')) pan((k === 'ArrowLeft' ? -0.25 : 0.25) * (t1 - t0));
    else if (!tr) return;
    else if (k === 'ArrowRight' || k === 'ArrowLeft') step(tr, el, k === 'ArrowRight' ? 1 : -1);
    else if (k === 'Home' || k === 'End') { const l = items(tr); if (l.length) go(tr, l[k === 'Home' ? 0 : l.length - 1]); }
    else if (k === 'ArrowUp' || k === 'ArrowDown') {
      const i = tracks.indexOf(tr), dir = k === 'ArrowUp' ? -1 : 1;
      for (let j = i + dir; j >= 0 && j < tracks.length; j += dir) {
        tracks[j].cur = at; if (rove(tracks[j], true)) break;
      }
    } else return;
    e.preventDefault();
  });
  $$('[data-z]', tl).forEach(b => b.addEventListener('click', () => {
    const z = b.dataset.z, span = t1 - t0;
    if (z === 'in') zoom(0.5); else if (z === 'out') zoom(2); else if (z === 'all') view(LO, HI);
    else pan((z === 'left' ? -0.5 : 0.5) * span);
  }));
  // wheel zooms where the pointer is (a trackpad pinch comes as ctrl+wheel), sideways pans
  area.addEventListener('wheel', e => {
    const r = tracks[0].getBoundingClientRect(), span = t1 - t0;
    if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) pan((e.deltaX || e.deltaY) / r.width * span);
    else if (e.deltaY > 0 && span >= HI - LO) return;  // nothing more to show: the page scrolls
    else zoom(Math.exp(e.deltaY * (e.ctrlKey ? 0.01 : 0.002)), t0 + (e.clientX - r.left) / r.width * span);
    e.preventDefault();
  }, {passive: false});
  const ptrs = new Map();
  let grab = null, moved = false;
  area.addEventListener('pointerdown', e => {
    ptrs.set(e.pointerId, e.clientX); moved = false;
    const r = tracks[0].getBoundingClientRect(), xs = [...ptrs.values()];
    const x = xs.reduce((s, v) => s + v, 0) / xs.length;
    grab = {x, dist: xs.length > 1 ? Math.abs(xs[0] - xs[1]) || 1 : 0, span: t1 - t0,
            at: t0 + (x - r.left) / r.width * (t1 - t0), left: r.left, w: r.width};
  });
  area.addEventListener('pointermove', e => {
    if (!grab || !ptrs.has(e.pointerId)) return;
    ptrs.set(e.pointerId, e.clientX);
    const xs = [...ptrs.values()], x = xs.reduce((s, v) => s + v, 0) / xs.length;
    if (!moved && Math.abs(x - grab.x) < 5 && xs.length < 2) return;
    if (!moved) { moved = true; area.setPointerCapture(e.pointerId); }
    const span = xs.length > 1 && grab.dist ? grab.span * grab.dist / (Math.abs(xs[0] - xs[1]) || 1) : grab.span;
    const a = grab.at - (x - grab.left) / grab.w * span;
    view(a, a + span);
  });
  const up = e => { ptrs.delete(e.pointerId); grab = null; };
  area.addEventListener('pointerup', up); area.addEventListener('pointercancel', up);
  area.addEventListener('click', e => { if (moved) { e.stopPropagation(); e.preventDefault(); moved = false; } }, true);
  tl.querySelector('.tlbar').hidden = false;
  new ResizeObserver(() => layout()).observe(tracks[0] || tl);
  layout();
}
})();
"""

# 'self': the list of days (days.js) beside the page's folder; nothing else is ever loaded
_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline' 'self'; img-src data:"
# where a day page and published/index.html look for the list of days: published/days.js from a
# day's folder, af serve's /days.js from /day/DAY, and an `af view` page's own folder
DAYS_SCRIPTS = ("../days.js", "days.js")


def _e(text: object) -> str:
    return html.escape(emit.printable(text), quote=True)


def _page(title: str, body: str, script: bool) -> str:
    lists = "".join(f"<script src=\"{src}\"></script>" for src in DAYS_SCRIPTS) if script else ""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
        + (f"{lists}\n<script>{_JS}</script>\n" if script else "")
        + "</body></html>\n"
    )


def _secs(hms: str | None) -> int:
    if not hms:
        return 0
    h, m, s = (int(x) for x in hms.split(":"))
    return h * 3600 + m * 60 + s


def _hms(sec: int) -> str:
    return f"{sec // 3600:02d}:{sec % 3600 // 60:02d}:{sec % 60:02d}"


def _hue_color(name: str) -> str:
    """A stable colour for a name (sha256, not hash(): the same in every process)."""
    v = int(hashlib.sha256(name.encode("utf-8")).hexdigest()[:8], 16)
    return f"hsl({v % 360},55%,{48 + (v >> 9) % 14}%)"


def category_color(label: str) -> str:
    if label == categories.UNCATEGORIZED:
        return _GREY
    top, _, rest = label.partition(categories.SEP)
    base = int(hashlib.sha256(top.encode("utf-8")).hexdigest()[:8], 16) % 360
    shift = int(hashlib.sha256(rest.encode("utf-8")).hexdigest()[:4], 16) % 40 - 20 if rest else 0
    return f"hsl({(base + shift) % 360},60%,{45 + len(label.split(categories.SEP)) * 6}%)"


def app_colors(apps: Sequence[str]) -> dict[str, str]:
    return {a: (_PALETTE[i] if i < len(_PALETTE) else _hue_color(a)) for i, a in enumerate(apps)}


def _pct(v: float) -> str:
    return f"{max(0.0, min(100.0, v)):.3f}%"


def _mins(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def _bars(rows: Sequence[tuple[str, float, float | None, str]], color: Callable[[str], str] | None = None) -> str:
    """Ledger rows (name, minutes per monitor, minutes on one timeline, note) as bars: the dark
    bar is one-timeline minutes, the light one behind it per-monitor minutes."""
    if not rows:
        return "<p class=\"sum\">none</p>"
    top = max(max(pm, tl or 0.0) for _, pm, tl, _ in rows) or 1.0
    out = []
    for name, pm, tl, note in rows:
        fill = f" style=\"background:{color(name)};width:{_pct(100 * (tl if tl is not None else pm) / top)}\"" \
            if color else f" style=\"width:{_pct(100 * (tl if tl is not None else pm) / top)}\""
        value = (f"{_mins(tl)} min on one timeline · {pm:.1f} per monitor" if tl is not None else f"{pm:.1f} min") + note
        out.append(f"<div class=\"bar\"><span class=\"n\" title=\"{_e(name)}\">{_e(name)}</span>"
                   f"<span class=\"v\">{_e(value)}</span><span class=\"b\" aria-hidden=\"true\">"
                   f"<span class=\"pm\" style=\"width:{_pct(100 * pm / top)}\"></span>"
                   f"<span class=\"tl\"{fill}></span></span></div>")
    return "\n".join(out)


# an integer ref tail read as a capture's own time: microseconds since the epoch, 2001-2286
_US_LO, _US_HI = 10**15, 10**16
_FOLD = 6  # evidence of more refs than this is folded under its summary


def _ref_times(ids: list[int], tz: str, day: str) -> list[str] | None:
    """The ids as local HH:MM:SS when each is a microsecond timestamp on or next to the day."""
    if not ids or not all(_US_LO <= v < _US_HI for v in ids):
        return None
    zone = timeutil.zone(tz)
    if any(abs((date.fromisoformat(timeutil.local_day(v, zone)) - date.fromisoformat(day)).days) > 1
           for v in (ids[0], ids[-1])):
        return None
    return [timeutil.hhmmss(v, zone) for v in ids]


def _evidence(ev: Mapping[str, list[dict[str, str]]], tz: str = "UTC", day: str = "1970-01-01") -> str:
    """Each kind's rows: runs of ids as ranges, ids that are capture times (ActivityWatch's event
    starts) as HH:MM:SS, folded under a one-line summary when long."""
    parts = []
    for kind in sorted(ev):
        enc = ev[kind]
        n = len(decode_refs(enc))
        texts, spans = [], []
        for g in enc:
            if "prefix" not in g:
                texts.append(g["ref"])
                continue
            ids = [int(r[len(g["prefix"]):]) for r in decode_refs([g])]
            times = _ref_times(ids, tz, day)
            if times is None:
                texts.append(f"{g['prefix']}{{{g['ids']}}}")
            else:
                spans.append((times[0], times[-1]))
                texts.append(f"{g['prefix']}… at " + ", ".join(times))
        when = f", {min(a for a, _ in spans)}–{max(b for _, b in spans)}" if spans else ""
        head = f"{kind} ({n} row{'s' if n != 1 else ''}{when})"
        body = "".join(f"<li class=\"refs\">{_e(t)}</li>" for t in texts)
        if n > _FOLD:
            parts.append(f"<li><details><summary>{_e(head)}</summary><ul>{body}</ul></details></li>")
        else:
            parts.append(f"<li>{_e(head)}: <ul>{body}</ul></li>")
    return "<ul>" + "".join(parts) + "</ul>"


def _volume(f: dict[str, Any], recorded: bool = True) -> str:
    """A frame's input counts, or that its source records no input (its zeros are missing data,
    not an idle user): said by the frame on a day of mixed sources, by the day's coverage when
    every source of the day records none (ActivityWatch)."""
    if not recorded or f.get("input_recorded") is False:
        return emit.NO_INPUT
    v = f.get("input", {})
    return (f"{v.get('keys', 0)} keys, {v.get('clicks', 0)} clicks, {v.get('scrolls', 0)} scrolls, "
            f"{v.get('text', 0)} text entries ({v.get('chars', 0)} chars), {v.get('copies', 0)} copies, "
            f"{v.get('pastes', 0)} pastes")


def _frame_detail(f: dict[str, Any], cat: dict[str, Any] | None, recorded: bool = True,
                  tz: str = "UTC", day: str = "1970-01-01") -> str:
    rows = [("time", f"{f['start']}–{f['end']} ({f['wall_min']:.2f} min wall)"),
            ("active", f"{f['active_min']:.2f} min"),
            ("presence only", f"{f.get('presence_only_s', 0)} s (heartbeats without input)"),
            ("stream", f["stream"]), ("site", f.get("site") or "-"), ("input", _volume(f, recorded)),
            ("rows", str(f.get("rows", "-")))]
    dl = "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in rows)
    if cat is not None:
        dl += (f"<dt>category <span class=\"tier2\">inferred</span></dt><dd>{_e(cat['label'])} "
               f"<span class=\"tier2\">({_e(cat['confidence'])}; rule {_e(cat['rule'])}: {_e(cat['pattern'])})</span></dd>")
    else:
        dl += f"<dt>category <span class=\"tier2\">inferred</span></dt><dd>{categories.UNCATEGORIZED} (no rule matched)</dd>"
    parts = [f"<article class=\"fd\" id=\"d-{_e(f['id'])}\" hidden tabindex=\"-1\">"
             f"<h3>{_e(f['id'])} · {_e(f['app'])}</h3><dl>{dl}</dl>"]
    if f.get("windows"):
        parts.append("<h3>Windows</h3><ul>" + "".join(
            f"<li>{_e(w['title'])} ({w['minutes']:.2f} min)</li>" for w in f["windows"]) + "</ul>")
    if f.get("pages"):
        parts.append("<h3>Pages</h3><ul>" + "".join(
            f"<li>{_e(p['kind'])} <b>{_e(p.get('entity', ''))}</b> ×{p['count']}</li>" for p in f["pages"]) + "</ul>")
    if f.get("clicked"):
        parts.append("<h3>Clicked</h3><ul>" + "".join(
            f"<li>{_e(c['target'])}" + (f" ({_e(c['role'])})" if c.get("role") else "")
            + f" — {_e(c['resolution'])} ×{c['count']}</li>" for c in f["clicked"]) + "</ul>")
    if f.get("unresolved_clicks"):
        parts.append(f"<p>{f['unresolved_clicks']} click(s) matched no element, ring or zone.</p>")
    if f.get("interruptions"):
        parts.append("<h3>Interruptions</h3><ul>" + "".join(
            f"<li>{_e(it['at'])} {_e(it['app'])}" + (f" ({_e(it['site'])})" if it.get("site") else "")
            + f" {it['seconds']} s</li>" for it in f["interruptions"]) + "</ul>")
    parts.append("<h3>Evidence</h3>" + _evidence(f.get("evidence", {}), tz, day))
    parts.append("</article>")
    return "".join(parts)


def render_day(doc: dict[str, Any], context_text: str | None = None,
               away: Mapping[str, Sequence[tuple[str, str]]] | None = None) -> str:
    """The day page of a schema v1 document (its context block is rendered here unless given).

    ``away``: per stream, the spans its window time was away from the screen, drawn on the
    timeline as "away"; by default the document's own (``coverage.streams[].away``)."""
    doc = strip_typed_text(doc)
    cov = doc["coverage"]
    frames = doc["frames"]
    recorded = cov.get("input_recorded") is not False
    if away is None:
        away = {e["stream"]: [(a, b) for a, b in e["away"]] for e in cov.get("streams", []) if e.get("away")}
    away = {s: list(v) for s, v in away.items() if v}
    cats = categories.categories_of(doc)
    colors = app_colors([a["app"] for a in doc["apps"]])
    first, last = _secs(cov.get("first_activity")), _secs(cov.get("last_activity"))
    if away and cov.get("first_activity") is not None:  # away before or after the frames is still shown
        first = min([first] + [_secs(a) for spans in away.values() for a, _b in spans])
        last = max([last] + [_secs(b) for spans in away.values() for _a, b in spans])
    # the axis covers the day's activity, cut at round ticks (finer for a short day)
    step = next((st for lim, st in ((3600, 600), (3 * 3600, 1800), (12 * 3600, 3600)) if last - first <= lim), 7200)
    lo = (first // step) * step
    hi = min(_DAY_S, max(lo + step, -(-last // step) * step))
    span = hi - lo

    def x(sec: int) -> float:
        return 100 * (sec - lo) / span

    axis = "".join(f"<span style=\"left:{_pct(x(t))}\">{t // 3600:02d}:{t % 3600 // 60:02d}</span>"
                   for t in range(lo, hi + 1, step))
    gaps = "".join(
        f"<div class=\"gap\" style=\"left:{_pct(x(_secs(g['start'])))};width:{_pct(x(_secs(g['end'])) - x(_secs(g['start'])))}\""
        f" title=\"capture gap {_e(g['start'])}–{_e(g['end'])}: unknown time, not inactivity\" "
        f"data-a=\"{_secs(g['start'])}\" data-b=\"{_secs(g['end'])}\"></div>"
        for g in cov.get("gaps", []))
    streams = sorted({f["stream"] for f in frames})
    grid = "<div class=\"grid\"></div>"
    tracks = []
    listed = []
    for s in streams:
        bars = []
        row = [f for f in frames if f["stream"] == s]
        for f in row:
            a, b = _secs(f["start"]), _secs(f["end"])
            b = b if b >= a else _DAY_S
            cat = cats.get(f["id"])
            label = cat["label"] if cat else categories.UNCATEGORIZED
            wall_s = max(1, b - a)
            po = min(100.0, 100 * f.get("presence_only_s", 0) / wall_s)
            name = f"{f['app']} {f['start']}–{f['end']}, {f['active_min']:.1f} min active, {label}"
            colour = f"--ca:{colors.get(f['app'], _GREY)};--cc:{category_color(label)}"
            bars.append(
                f"<button class=\"frame\" type=\"button\" data-f=\"{_e(f['id'])}\" data-a=\"{a}\" data-b=\"{b}\" "
                f"tabindex=\"{0 if f is row[0] else -1}\" aria-pressed=\"false\" aria-label=\"{_e(name)}\" "
                f"title=\"{_e(name)}\" style=\"left:{_pct(x(a))};width:{_pct(x(b) - x(a))};{colour}\">"
                + (f"<span class=\"po\" style=\"width:{_pct(po)}\"></span>" if po > 0 else "")
                + f"<span class=\"fl\">{_e(f['app'])}</span></button>")
            for it in f.get("interruptions", []):
                bars.append(f"<span class=\"tick\" style=\"left:{_pct(x(_secs(it['at'])))}\" data-a=\"{_secs(it['at'])}\" "
                            f"title=\"interruption: {_e(it['app'])} {it['seconds']} s\"></span>")
            where = f.get("site") or (f["windows"][0]["title"] if f.get("windows") else "")
            listed.append(
                f"<li><button class=\"fi\" type=\"button\" data-f=\"{_e(f['id'])}\" aria-pressed=\"false\" "
                f"style=\"--ca:{colors.get(f['app'], _GREY)}\"><b>{_e(f['start'])}–{_e(f['end'])}</b> {_e(f['app'])}"
                + (f" · {_e(where)}" if where else "")
                + f"<br><span class=\"m\">{f['active_min']:.1f} min active · {_e(s)} · {_e(label)}</span></button></li>")
        tracks.append(f"<div class=\"stream\"><div class=\"sname\" title=\"{_e(s)}\">{_e(s)}</div>"
                      f"<div class=\"track\" role=\"group\" aria-label=\"frames on {_e(s)}: arrows move, + and - zoom\">"
                      f"{grid}{gaps}{''.join(bars)}</div></div>")
    if frames:
        # presence: the afk watcher's away spans, one row for all monitors (each span names its stream)
        spans = sorted((_secs(a), _secs(b), st) for st, v in away.items() for a, b in v)
        many = len(away) > 1
        marks = "".join(
            f"<div class=\"away\" style=\"left:{_pct(x(a))};width:{_pct(x(b) - x(a))}\" "
            f"title=\"away {_hms(a)}–{_hms(b)}{' on ' + _e(st) if many else ''}: the presence source said not at the screen; "
            f"not active time\" data-a=\"{a}\" data-b=\"{b}\" tabindex=\"{0 if i == 0 else -1}\" role=\"img\" "
            f"aria-label=\"away {_hms(a)}–{_hms(b)}\">away</div>"
            for i, (a, b, st) in enumerate(spans))
        if not cov.get("presence") and not spans:
            marks = "<span class=\"note\">presence not recorded by this source: away time unknown</span>"
        tracks.append(f"<div class=\"stream pres\"><div class=\"sname\">presence</div>"
                      f"<div class=\"track\" role=\"group\" aria-label=\"time away from the screen\">{grid}{gaps}{marks}</div></div>")
    cat_rows = categories.totals(doc)
    # the legend follows the colour switch: app swatches by app, category swatches by category
    keys = "".join(f"<span class=\"ka\"><i class=\"sw\" style=\"background:{c}\"></i>{_e(a)}</span>"
                   for a, c in colors.items())
    keys += "".join(f"<span class=\"kc\"><i class=\"sw\" style=\"background:{category_color(label)}\"></i>"
                    f"{_e(label)}</span>" for label, _m, _n in cat_rows)
    if away:
        keys += "<span><i class=\"sw away\"></i>away (not at the screen; not active time)</span>"
    keys += ("<span><i class=\"sw grp\" style=\"background:#8c959f\"></i>grey number: frames too small to pick "
             "at this zoom (click to zoom in)</span>"
             "<span><i class=\"sw gap\"></i>capture gap (unknown, not idle)</span>"
             "<span>▮ striped lower band: presence-only share (position in the frame not recorded)</span>"
             "<span>▏ tick above: interruption</span>")
    summary = (f"{cov['first_activity'] or '-'}–{cov['last_activity'] or '-'} · active {cov['active_min']:.1f} min "
               f"per monitor, {_mins(cov.get('timeline_min'))} min on one timeline · {cov['frames']} frames · "
               f"{cov['distinct_apps']} apps · presence only {cov['presence_only']['minutes']:.1f} min · "
               f"capture gaps {cov.get('gap_min', 0):.1f} min")
    if cov.get("presence"):
        summary += f" · away {cov['presence']['away_min']:.1f} min"
    if not recorded:
        summary += f" · {emit.NO_INPUT}"
    apps = _bars([(a["app"], a["minutes"], a.get("timeline_minutes"),
                   f" · {a['frames']} frame{'s' if a['frames'] != 1 else ''}") for a in doc["apps"]],
                 lambda n: colors.get(n, _GREY))
    domains = _bars([(d["domain"], d["minutes"], d.get("timeline_minutes"), f" · {d['visits']} visits")
                     for d in doc["domains"]])
    cat_bars = _bars([(label, m, None, f" per monitor · {n} frame{'s' if n != 1 else ''}") for label, m, n in cat_rows],
                     category_color)
    gen = doc.get("inferred", {}).get(categories.NAMESPACE, {}).get("generator", "no rule matched")
    details = "".join(_frame_detail(f, cats.get(f["id"]), recorded, doc["tz"], doc["day"]) for f in frames)
    context = context_text if context_text is not None else emit.context_block(doc)
    blind = "".join(f"<li><b>{_e(b['kind'])}</b>: {_e(b['note'])}</li>" for b in doc["blind_spots"])
    week = week_of(doc["day"])
    body = f"""<header><nav id="nav" class="days" aria-label="other days" data-day="{_e(doc['day'])}" data-week="{week}" hidden></nav>
<h1>Activity on {_e(doc['day'])} <span class="sum">({_e(doc['tz'])})</span></h1>
<p class="sum">{_e(summary)}</p>
<fieldset><legend>Colour frames by</legend><label><input type="radio" name="colorby" value="app" checked> app</label>
<label><input type="radio" name="colorby" value="cat"> category <span class="tier2">(inferred)</span></label></fieldset>
</header>
<main>
<section id="tl" aria-labelledby="h-tl" data-lo="{lo}" data-hi="{hi}"><h2 id="h-tl">Timeline</h2>
<div class="tlbar" role="toolbar" aria-label="zoom and pan" hidden><button type="button" data-z="in" aria-label="zoom in">+</button><button type="button" data-z="out" aria-label="zoom out">−</button><button type="button" data-z="left" aria-label="earlier">◀</button><button type="button" data-z="right" aria-label="later">▶</button><button type="button" data-z="all">whole day</button><span id="tlwin" aria-live="polite"></span></div>
<div class="axis" aria-hidden="true">{axis}</div>
<div class="rows">{''.join(tracks) or '<p class="sum">no frames</p>'}</div>
<div class="keys">{keys}</div></section>
<section id="detail" aria-live="polite" aria-label="frame evidence"><p id="hint" class="sum">Select a frame (click or tap it, or Tab to a row and press Enter; arrows move along the row, up and down between rows, + and - zoom, Shift+arrows pan, 0 shows the whole day, Escape closes) to see its windows, pages, clicks, input and evidence rows.</p>
{details}</section>
<section aria-labelledby="h-fl"><h2 id="h-fl">Frames</h2>
<label>Search the day's frames <input type="search" id="q" placeholder="title, site, page, app"></label> <span id="qn" class="sum" aria-live="polite"></span>
<details id="fl"><summary>All {len(frames)} frames as a list</summary><ol id="flist">{''.join(listed)}</ol></details></section>
<div class="cols">
<section aria-labelledby="h-apps"><h2 id="h-apps">Apps</h2>{apps}</section>
<section aria-labelledby="h-dom"><h2 id="h-dom">Domains</h2>{domains}</section>
<section aria-labelledby="h-cat"><h2 id="h-cat">Categories <span class="tier2">inferred: {_e(gen)}</span></h2>{cat_bars}</section>
</div>
<section aria-labelledby="h-bs"><h2 id="h-bs">Blind spots</h2><ul>{blind}</ul></section>
<details><summary>Context block (what an agent reads)</summary><pre>{_e(context)}</pre></details>
</main>"""
    return _page(f"Activity on {doc['day']}", body, script=True)


# -- the list of days, kept outside every day's folder ----------------------------------------------


def days_script(days: Sequence[str], day_link: str, week_link: str | None, index_link: str) -> str:
    """published/days.js (or af serve's /days.js): the days there are and where their pages are,
    for the pages' links. Links are relative to this script's own address ({} is the day or the
    week), so one list serves a day page under published/DAY/ and the index beside it."""
    data = {"days": sorted(days), "day": day_link, "week": week_link, "index": index_link}
    return ("// activity-frames: the published days, for the links of the pages (not part of any day)\n"
            "(s => { window.AF_DAYS = Object.assign({base: s ? s.src : location.href}, "
            + json.dumps(data, sort_keys=True) + "); })(document.currentScript);\n")


# published/index.html: the days and weeks from days.js, drawn by the page (its bytes name no day)
_INDEX_JS = """
(() => {
const A = window.AF_DAYS, d = document, out = d.getElementById('days');
if (!A || !A.days.length) return;
out.textContent = '';
const week = s => { const t = new Date(s + 'T12:00:00Z'), w = (t.getUTCDay() + 6) % 7;
  t.setUTCDate(t.getUTCDate() - w + 3); const y = t.getUTCFullYear(), j = new Date(Date.UTC(y, 0, 4));
  return y + '-W' + String(1 + Math.round(((t - j) / 864e5 - 3 + (j.getUTCDay() + 6) % 7) / 7)).padStart(2, '0'); };
const by = new Map();
[...A.days].reverse().forEach(x => { const w = week(x); if (!by.has(w)) by.set(w, []); by.get(w).push(x); });
by.forEach((days, w) => {
  const h = d.createElement('h2'); h.id = w; h.textContent = 'Week ' + w; out.appendChild(h);
  const ul = d.createElement('ul');
  days.forEach(x => { const li = d.createElement('li'), a = d.createElement('a');
    a.href = new URL(A.day.split('{}').join(x), A.base).href; a.textContent = x; li.appendChild(a); ul.appendChild(li); });
  out.appendChild(ul);
});
if (location.hash) { const t = d.getElementById(location.hash.slice(1)); if (t) { t.scrollIntoView(); t.tabIndex = -1; t.focus(); } }
})();
"""


def index_page() -> str:
    """published/index.html: every published day by week, newest first (from days.js beside it)."""
    body = ("<header><h1>activity-frames: published days</h1></header>\n<main id=\"days\"><p class=\"sum\">"
            "No list of days beside this page (days.js): run af build.</p></main>")
    return (f"<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">"
            f"<title>activity-frames</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            f"<script src=\"days.js\"></script>\n<script>{_INDEX_JS}</script>\n</body></html>\n")


# -- the week -----------------------------------------------------------------------------------


def is_day(text: str) -> bool:
    """Whether text is a calendar day written YYYY-MM-DD."""
    if len(text) != 10 or text[4] != "-" or text[7] != "-":
        return False
    try:
        date.fromisoformat(text)
    except ValueError:
        return False
    return True


def week_days(week: str) -> list[str]:
    """The seven days (Monday first) of an ISO week written YYYY-Www; ValueError otherwise."""
    year, sep, w = week.partition("-W")
    if not sep or not (year.isdigit() and w.isdigit()):
        raise ValueError(f"{week!r} is not an ISO week like 2026-W12")
    monday = date.fromisocalendar(int(year), int(w), 1)
    return [(monday + timedelta(days=i)).isoformat() for i in range(7)]


def previous_week(week: str) -> str:
    monday = date.fromisoformat(week_days(week)[0]) - timedelta(days=7)
    y, w, _ = monday.isocalendar()
    return f"{y}-W{w:02d}"


def week_of(day: str) -> str:
    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"


def hour_minutes(doc: dict[str, Any]) -> list[float]:
    """Minutes of each local hour with a frame on any monitor (one timeline: overlaps count once)."""
    spans = sorted((_secs(f["start"]), max(_secs(f["start"]), _secs(f["end"]) if f["end"] >= f["start"] else _DAY_S))
                   for f in doc["frames"])
    merged: list[list[int]] = []
    for a, b in spans:
        if merged and a <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    secs = [0] * 24
    for a, b in merged:
        t = a
        while t < b:
            h = min(23, t // 3600)
            end = min(b, (h + 1) * 3600) if h < 23 else b
            secs[h] += end - t
            t = end
    return [round(s / 60, 1) for s in secs]


def _sum_ledger(docs: Mapping[str, dict[str, Any]], table: str, key: str) -> dict[str, int]:
    acc: dict[str, int] = {}
    for d in docs.values():
        for row in d.get(table, []):
            m = row.get("timeline_minutes", row["minutes"])
            acc[row[key]] = acc.get(row[key], 0) + round(m * 60_000_000)
    return acc


def _sum_categories(docs: Mapping[str, dict[str, Any]]) -> dict[str, int]:
    acc: dict[str, int] = {}
    for d in docs.values():
        for label, m, _n in categories.totals(d):
            acc[label] = acc.get(label, 0) + round(m * 60_000_000)
    return acc


def _totals_table(title: str, unit: str, now: dict[str, int], before: dict[str, int] | None, limit: int = 12) -> str:
    """Totals of the week; with ``before`` (None: no previous week captured) the change from it."""
    rows = sorted(now, key=lambda k: (-now[k], k))[:limit]
    cols = "<th>previous week</th><th>change</th>" if before is not None else ""
    out = [f"<section><h2>{title}</h2><table class=\"tot\"><thead><tr><th>name</th><th>{unit}</th>{cols}"
           "</tr></thead><tbody>"]
    for k in rows:
        m = now[k] / 60e6
        if before is None:
            out.append(f"<tr><td>{_e(k)}</td><td>{m:.1f}</td></tr>")
            continue
        p = before.get(k, 0) / 60e6
        delta = m - p
        cls = "up" if delta > 0.05 else ("down" if delta < -0.05 else "")
        change = f"{delta:+.1f}" if k in before else "new"
        out.append(f"<tr><td>{_e(k)}</td><td>{m:.1f}</td><td>{p:.1f}</td><td class=\"{cls}\">{change}</td></tr>")
    if not rows:
        out.append(f"<tr><td colspan=\"{4 if before is not None else 2}\">none</td></tr>")
    out.append("</tbody></table></section>")
    return "".join(out)


def next_week(week: str) -> str:
    monday = date.fromisoformat(week_days(week)[0]) + timedelta(days=7)
    y, w, _ = monday.isocalendar()
    return f"{y}-W{w:02d}"


def render_week(
    week: str,
    docs: Mapping[str, dict[str, Any]],
    previous: Mapping[str, dict[str, Any]],
    routines: Sequence[Mapping[str, Any]] = (),
    day_href: Callable[[str], str | None] = lambda day: f"../{day}/view.html",
    week_href: Callable[[str], str | None] = lambda week: None,
    index_href: str | None = None,
) -> str:
    """The week page: ``docs`` by day for the week, ``previous`` the week before's (for the
    change column; empty: no change column), ``routines`` as {"label", "count"} (most frequent
    first), ``day_href`` the link of a day's page and ``week_href`` of a week's (None: no link),
    ``index_href`` the list of all days."""
    days = week_days(week)
    names = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    wide = " class=\"h3\""  # the hours still labelled on a phone
    head = "".join(f"<th{wide if h % 6 == 0 else ''}>{h:02d}</th>" for h in range(24))
    rows = []
    total = 0.0
    for name, day in zip(names, days, strict=True):
        doc = docs.get(day)
        hours = hour_minutes(doc) if doc else [0.0] * 24
        total += sum(hours)
        href = day_href(day) if doc else None
        label = f"<a href=\"{_e(href)}\">{name} {day[5:]}</a>" if href else f"{name} {day[5:]}"
        cells = "".join(
            f"<td style=\"background:rgba(78,121,167,{min(1.0, m / 60):.2f})\" title=\"{day} {h:02d}:00 {m:.1f} min\""
            f" aria-label=\"{day} {h:02d}:00 {m:.1f} min\">{int(m + 0.5) if m else ''}</td>"
            for h, m in enumerate(hours))
        rows.append(f"<tr><th scope=\"row\" class=\"dn\">{label}</th>{cells}</tr>")
    items = []
    for d in days:
        if d not in docs:
            continue
        href = day_href(d)
        name = f"<a href=\"{_e(href)}\">{d}</a>" if href else f"{d} (not published: af build publishes its page)"
        items.append(f"<li>{name} ({docs[d]['coverage']['active_min']:.1f} min active)</li>")
    links = "".join(items) or "<li>no captured day this week</li>"
    found = "".join(f"<li>{_e(r['label'])} — {int(r['count'])}×</li>" for r in routines)
    rout = (f"<ol>{found}</ol>" if routines
            else "<p class=\"sum\">none found: a routine is a sequence repeated on several days</p>")
    nav = []
    for text, target in ((f"← week {previous_week(week)}", week_href(previous_week(week))),
                         ("all days", index_href), (f"week {next_week(week)} →", week_href(next_week(week)))):
        nav.append(f"<a href=\"{_e(target)}\">{_e(text)}</a>" if target else f"<span>{_e(text)}</span>")
    before = previous if previous else None
    prev_note = f"previous week {len(previous)} day(s)" if previous else "no day captured the previous week"
    body = f"""<header><nav class="days" aria-label="other weeks">{''.join(nav)}</nav>
<h1>Week {_e(week)} <span class="sum">{days[0]} – {days[-1]}</span></h1>
<p class="sum">{len(docs)} captured day(s) · {total:.0f} min with a frame on screen (one timeline) · {prev_note}</p></header>
<main>
<section aria-labelledby="h-days"><h2 id="h-days">Days</h2><ul>{links}</ul></section>
<section aria-labelledby="h-heat"><h2 id="h-heat">Minutes on screen by hour</h2>
<div class="heat"><table><thead><tr><th class="dn"></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>
<p class="sum">Minutes of each hour with a frame on any monitor; blank is no capture, which is unknown time, not idleness.</p></section>
<div class="cols">
{_totals_table("Apps", "min on one timeline", _sum_ledger(docs, "apps", "app"), _sum_ledger(previous, "apps", "app") if before else None)}
{_totals_table("Domains", "min on one timeline", _sum_ledger(docs, "domains", "domain"), _sum_ledger(previous, "domains", "domain") if before else None)}
{_totals_table('Categories <span class="tier2">inferred</span>', "min per monitor", _sum_categories(docs), _sum_categories(previous) if before else None)}
<section><h2>Top routines</h2>{rout}</section>
</div>
</main>"""
    return _page(f"Week {week}", body, script=False)
