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
from collections.abc import Callable, Mapping, Sequence
from datetime import date, timedelta
from typing import Any

from af_pipeline.compiler import categories, emit
from af_pipeline.compiler.document import decode_refs, strip_typed_text

_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
            "#9c755f", "#86bcb6")
_GREY = "#9aa0a6"
_DAY_S = 86_400

_CSS = """
*{box-sizing:border-box}
body{margin:0;overflow-x:hidden;font:14px/1.4 "DejaVu Sans",sans-serif;color:#1f2328;background:#fff}
header,main{max-width:1200px;margin:0 auto;padding:8px 16px}
h1{font-size:20px;margin:8px 0}h2{font-size:16px;margin:18px 0 6px}h3{font-size:14px;margin:4px 0}
.sum{color:#57606a;margin:2px 0}.tier2{color:#8250df;font-size:12px}
a{color:#0969da}
fieldset{border:0;padding:0;margin:6px 0}legend{float:left;margin-right:8px}
.axis{position:relative;height:18px;margin-left:96px;font-size:11px;color:#57606a}
.axis span{position:absolute;transform:translateX(-50%)}
.stream{display:flex;align-items:center;margin:4px 0}
.sname{width:96px;flex:none;font-size:12px;overflow:hidden;text-overflow:ellipsis}
.track{position:relative;flex:1;height:34px;background:#f6f8fa;border:1px solid #d0d7de;border-radius:4px}
.gap{position:absolute;top:0;bottom:0;background:repeating-linear-gradient(45deg,#d0d7de 0 3px,transparent 3px 7px)}
.frame{position:absolute;top:3px;bottom:3px;min-width:3px;padding:0;border:0;border-radius:3px;cursor:pointer;
 background:var(--ca);overflow:hidden}
body.by-cat .frame{background:var(--cc)}
.kc,body.by-cat .ka{display:none}body.by-cat .kc{display:inline}
.frame:focus-visible,.frame[aria-pressed=true]{outline:3px solid #1f2328;outline-offset:1px;z-index:2}
.po{position:absolute;left:0;bottom:0;height:40%;background:repeating-linear-gradient(90deg,rgba(255,255,255,.75) 0 2px,transparent 2px 4px)}
.away{position:absolute;top:0;bottom:0;overflow:hidden;font-size:11px;line-height:32px;text-align:center;color:#57606a;
 border:1px dashed #8c959f;border-radius:3px;background:repeating-linear-gradient(-45deg,#eaeef2 0 4px,#fff 4px 8px)}
.sw.away{position:static;line-height:normal;border-width:1px}
.tick{position:absolute;top:-3px;width:2px;height:8px;background:#1f2328;pointer-events:none}
.keys{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px;margin:6px 0 0 96px}
.sw{display:inline-block;width:12px;height:12px;border-radius:2px;vertical-align:-2px;margin-right:4px}
.sw.gap{position:static;background:repeating-linear-gradient(45deg,#8c959f 0 2px,#fff 2px 4px)}
#detail{overflow-wrap:anywhere;border:1px solid #d0d7de;border-radius:6px;padding:8px 12px;min-height:64px}
#detail ul{margin:2px 0 6px;padding-left:18px}#detail dl{display:grid;grid-template-columns:max-content 1fr;gap:0 10px;margin:4px 0}
#detail dt{color:#57606a}#detail dd{margin:0}
.refs{font:12px "DejaVu Sans Mono",monospace;word-break:break-all}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:0 24px}
.bar{display:grid;grid-template-columns:1fr auto;gap:0 8px;margin:4px 0;font-size:12px}
.bar .n{overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.bar .v{color:#57606a;font-size:11px;text-align:right}
.bar .b{grid-column:1/3;position:relative;height:10px;background:#f6f8fa;border-radius:2px}
.bar .pm{position:absolute;left:0;top:0;bottom:0;background:#d0d7de;border-radius:2px}
.bar .tl{position:absolute;left:0;top:0;bottom:0;background:#4e79a7;border-radius:2px}
pre{white-space:pre-wrap;word-break:break-word;font:11px/1.35 "DejaVu Sans Mono",monospace;background:#f6f8fa;padding:8px;
 border-radius:6px}
.heat{overflow-x:auto}.heat table{border-collapse:collapse;font-size:11px}
.heat td{width:30px;height:24px;border:1px solid #fff;text-align:center;color:#1f2328}
.heat th{font-weight:normal;color:#57606a;padding:0 4px;text-align:left}
table.tot{border-collapse:collapse;font-size:12px;width:100%}
table.tot td,table.tot th{padding:2px 6px;border-bottom:1px solid #eaeef2;text-align:right}
table.tot td:first-child,table.tot th:first-child{text-align:left}
.up{color:#1a7f37}.down{color:#cf222e}
@media (max-width:600px){.sname{width:64px}.axis,.keys{margin-left:64px}header,main{padding:6px 8px}
 .axis span:nth-child(even){display:none}}
"""

# Frames are buttons: Tab reaches them, Enter/Space opens their evidence, arrows move along a
# stream, Escape closes. The colour switch only toggles a class.
_JS = """
(function(){
var d=document,frames=[].slice.call(d.querySelectorAll('.frame'));
function show(b){frames.forEach(function(x){x.setAttribute('aria-pressed','false')});
[].forEach.call(d.querySelectorAll('.fd'),function(a){a.hidden=true});
var hint=d.getElementById('hint');
if(!b){hint.hidden=false;return}
b.setAttribute('aria-pressed','true');hint.hidden=true;d.getElementById('d-'+b.dataset.f).hidden=false}
frames.forEach(function(b){b.addEventListener('click',function(){show(b)})});
d.addEventListener('keydown',function(e){var b=e.target;
if(e.key==='Escape'){show(null);return}
if(!b.classList||!b.classList.contains('frame'))return;
var row=[].slice.call(b.parentNode.querySelectorAll('.frame')),i=row.indexOf(b),j=-1;
if(e.key==='ArrowRight')j=Math.min(row.length-1,i+1);else if(e.key==='ArrowLeft')j=Math.max(0,i-1);
else if(e.key==='Home')j=0;else if(e.key==='End')j=row.length-1;
if(j>=0){e.preventDefault();row[j].focus();show(row[j])}});
[].forEach.call(d.querySelectorAll('input[name=colorby]'),function(r){r.addEventListener('change',function(){
d.body.classList.toggle('by-cat',r.value==='cat'&&r.checked)})});
})();
"""

_CSP = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:"


def _e(text: object) -> str:
    return html.escape(emit.printable(text), quote=True)


def _page(title: str, body: str, script: bool) -> str:
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{_CSP}\">"
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
        + (f"<script>{_JS}</script>\n" if script else "")
        + "</body></html>\n"
    )


def _secs(hms: str | None) -> int:
    if not hms:
        return 0
    h, m, s = (int(x) for x in hms.split(":"))
    return h * 3600 + m * 60 + s


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


def _evidence(ev: Mapping[str, list[dict[str, str]]]) -> str:
    parts = []
    for kind in sorted(ev):
        enc = ev[kind]
        text = "; ".join(f"{g['prefix']}{{{g['ids']}}}" if "prefix" in g else g["ref"] for g in enc)
        n = len(decode_refs(enc))
        parts.append(f"<li>{_e(kind)} ({n} rows): <span class=\"refs\">{_e(text)}</span></li>")
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


def _frame_detail(f: dict[str, Any], cat: dict[str, Any] | None, recorded: bool = True) -> str:
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
    parts.append("<h3>Evidence</h3>" + _evidence(f.get("evidence", {})))
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
        f" title=\"capture gap {_e(g['start'])}–{_e(g['end'])}: unknown time, not inactivity\"></div>"
        for g in cov.get("gaps", []))
    streams = sorted({f["stream"] for f in frames} | (set(away) if cov.get("first_activity") is not None else set()))
    tracks = []
    for s in streams:
        bars = [f"<div class=\"away\" style=\"left:{_pct(x(_secs(a)))};width:{_pct(x(_secs(b)) - x(_secs(a)))}\" "
                f"title=\"away {_e(a)}–{_e(b)}: the presence source said not at the screen; not active time\">away</div>"
                for a, b in away.get(s, [])]
        for f in (f for f in frames if f["stream"] == s):
            a, b = _secs(f["start"]), _secs(f["end"])
            b = b if b >= a else _DAY_S
            cat = cats.get(f["id"])
            label = cat["label"] if cat else categories.UNCATEGORIZED
            wall_s = max(1, b - a)
            po = min(100.0, 100 * f.get("presence_only_s", 0) / wall_s)
            name = f"{f['app']} {f['start']}–{f['end']}, {f['active_min']:.1f} min active, {label}"
            bars.append(
                f"<button class=\"frame\" type=\"button\" data-f=\"{_e(f['id'])}\" aria-pressed=\"false\" "
                f"aria-label=\"{_e(name)}\" title=\"{_e(name)}\" style=\"left:{_pct(x(a))};width:{_pct(x(b) - x(a))};"
                f"--ca:{colors.get(f['app'], _GREY)};--cc:{category_color(label)}\">"
                + (f"<span class=\"po\" style=\"width:{_pct(po)}\"></span>" if po > 0 else "") + "</button>")
            for it in f.get("interruptions", []):
                bars.append(f"<span class=\"tick\" style=\"left:{_pct(x(_secs(it['at'])))}\" "
                            f"title=\"interruption: {_e(it['app'])} {it['seconds']} s\"></span>")
        tracks.append(f"<div class=\"stream\"><div class=\"sname\" title=\"{_e(s)}\">{_e(s)}</div>"
                      f"<div class=\"track\" role=\"group\" aria-label=\"frames on {_e(s)}\">{gaps}{''.join(bars)}</div></div>")
    cat_rows = categories.totals(doc)
    # the legend follows the colour switch: app swatches by app, category swatches by category
    keys = "".join(f"<span class=\"ka\"><i class=\"sw\" style=\"background:{c}\"></i>{_e(a)}</span>"
                   for a, c in colors.items())
    keys += "".join(f"<span class=\"kc\"><i class=\"sw\" style=\"background:{category_color(label)}\"></i>"
                    f"{_e(label)}</span>" for label, _m, _n in cat_rows)
    if away:
        keys += "<span><i class=\"sw away\"></i>away (not at the screen; not active time)</span>"
    keys += ("<span><i class=\"sw gap\"></i>capture gap (unknown, not idle)</span>"
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
    details = "".join(_frame_detail(f, cats.get(f["id"]), recorded) for f in frames)
    context = context_text if context_text is not None else emit.context_block(doc)
    blind = "".join(f"<li><b>{_e(b['kind'])}</b>: {_e(b['note'])}</li>" for b in doc["blind_spots"])
    body = f"""<header><h1>Activity on {_e(doc['day'])} <span class="sum">({_e(doc['tz'])})</span></h1>
<p class="sum">{_e(summary)}</p>
<fieldset><legend>Colour frames by</legend><label><input type="radio" name="colorby" value="app" checked> app</label>
<label><input type="radio" name="colorby" value="cat"> category <span class="tier2">(inferred)</span></label></fieldset>
</header>
<main>
<section aria-labelledby="h-tl"><h2 id="h-tl">Timeline</h2>
<div class="axis" aria-hidden="true">{axis}</div>
{''.join(tracks) or '<p class="sum">no frames</p>'}
<div class="keys">{keys}</div></section>
<section id="detail" aria-live="polite" aria-label="frame evidence"><p id="hint" class="sum">Select a frame (click, or Tab to it and press Enter; arrows move along a stream, Escape closes) to see its windows, pages, clicks, input and evidence rows.</p>
{details}</section>
<div class="cols">
<section aria-labelledby="h-apps"><h2 id="h-apps">Apps</h2>{apps}</section>
<section aria-labelledby="h-dom"><h2 id="h-dom">Domains</h2>{domains}</section>
<section aria-labelledby="h-cat"><h2 id="h-cat">Categories <span class="tier2">inferred: {_e(gen)}</span></h2>{cat_bars}</section>
</div>
<section aria-labelledby="h-bs"><h2 id="h-bs">Blind spots</h2><ul>{blind}</ul></section>
<details><summary>Context block (what an agent reads)</summary><pre>{_e(context)}</pre></details>
</main>"""
    return _page(f"Activity on {doc['day']}", body, script=True)


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


def _totals_table(title: str, unit: str, now: dict[str, int], before: dict[str, int], limit: int = 12) -> str:
    rows = sorted(now, key=lambda k: (-now[k], k))[:limit]
    out = [f"<section><h2>{title}</h2><table class=\"tot\"><thead><tr><th>name</th><th>{unit}</th>"
           "<th>previous week</th><th>change</th></tr></thead><tbody>"]
    for k in rows:
        m, p = now[k] / 60e6, before.get(k, 0) / 60e6
        delta = m - p
        cls = "up" if delta > 0.05 else ("down" if delta < -0.05 else "")
        change = f"{delta:+.1f}" if k in before else "new"
        out.append(f"<tr><td>{_e(k)}</td><td>{m:.1f}</td><td>{p:.1f}</td><td class=\"{cls}\">{change}</td></tr>")
    if not rows:
        out.append("<tr><td colspan=\"4\">none</td></tr>")
    out.append("</tbody></table></section>")
    return "".join(out)


def render_week(
    week: str,
    docs: Mapping[str, dict[str, Any]],
    previous: Mapping[str, dict[str, Any]],
    routines: Sequence[Mapping[str, Any]] = (),
    day_href: Callable[[str], str | None] = lambda day: f"../{day}/view.html",
) -> str:
    """The week page: ``docs`` by day for the week, ``previous`` the week before's (for the
    change column), ``routines`` as {"label", "count"} (most frequent first), ``day_href`` the
    link of a day's page (None: no link)."""
    days = week_days(week)
    names = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
    head = "".join(f"<th>{h:02d}</th>" for h in range(24))
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
        rows.append(f"<tr><th scope=\"row\">{label}</th>{cells}</tr>")
    links = "".join(
        f"<li><a href=\"{_e(day_href(d))}\">{d}</a> ({docs[d]['coverage']['active_min']:.1f} min active)</li>"
        for d in days if d in docs and day_href(d)) or "<li>no captured day this week</li>"
    rout = "".join(f"<li>{_e(r['label'])} — {int(r['count'])}×</li>" for r in routines) or "<li>none found</li>"
    body = f"""<header><h1>Week {_e(week)} <span class="sum">{days[0]} – {days[-1]}</span></h1>
<p class="sum">{len(docs)} captured day(s) · {total:.0f} min with a frame on screen (one timeline) · previous week {len(previous)} day(s)</p></header>
<main>
<section aria-labelledby="h-heat"><h2 id="h-heat">Minutes on screen by hour</h2>
<div class="heat"><table><thead><tr><th></th>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>
<p class="sum">Minutes of each hour with a frame on any monitor; blank is no capture, which is unknown time, not idleness.</p></section>
<div class="cols">
{_totals_table("Apps", "min on one timeline", _sum_ledger(docs, "apps", "app"), _sum_ledger(previous, "apps", "app"))}
{_totals_table("Domains", "min on one timeline", _sum_ledger(docs, "domains", "domain"), _sum_ledger(previous, "domains", "domain"))}
{_totals_table('Categories <span class="tier2">inferred</span>', "min per monitor", _sum_categories(docs), _sum_categories(previous))}
<section><h2>Top routines</h2><ol>{rout}</ol></section>
</div>
<section><h2>Days</h2><ul>{links}</ul></section>
</main>"""
    return _page(f"Week {week}", body, script=False)
