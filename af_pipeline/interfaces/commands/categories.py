"""``af categories``: the category rules in force, importing ActivityWatch's, trying a rule on a
day before writing it down, and the apps no rule takes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from af_pipeline.interfaces import cli
from capture.home import resolve_home

_HELP = """\
Categories name what a frame was for ("Work > Programming", "Comms > Chat"). They are inferred
(tier 2) by rules over each frame's app, window titles and site, from <home>/categories.json or,
without it, the built-in defaults (Windows, macOS and Linux names of common apps, ignoring
case; browser titles naming a site). The measured document never changes with them.

  af categories list                      the rules in force and where they come from
  af categories import FILE [--replace]   copy ActivityWatch's export (Settings > Categorization
                                          > Export) or a {"rules": [...]} file to categories.json
  af categories test RULE --day DAY       which frames RULE would take, from which category
  af categories uncategorized [--day DAY | --from DAY --to DAY]
                                          the apps no rule takes, most minutes first

RULE is a pattern (a regular expression, RE2 syntax): title:REGEX, app:REGEX, site:REGEX, or a
bare REGEX for any of them; or a JSON rule object, e.g. '{"category": "Fun", "title": "YouTube"}'
or an ActivityWatch category '{"name": ["Fun"], "rule": {"type": "regex", "regex": "YouTube"}}'.
See docs/views.md (Categories). Exit codes: 0 ok, 2 bad input (the message names the file and
the rule, or the day).
"""

_TEST_HELP = """\
Try a rule against logged days without writing it anywhere: the frames it matches, their minutes,
the category each is in now, and whether the rule, added to the rules in force, would take it.
The pick is ActivityWatch's: of every rule that matches, the deepest category wins, then the
earlier rule; so a rule takes a frame from a shallower category (or from Uncategorized), and an
equally deep one only when added --first. Give --category to try a pattern at a depth.
"""


def register(sub: Any) -> None:
    p = sub.add_parser("categories", help="list, import and test category rules; the uncategorized apps",
                       description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    cmds = p.add_subparsers(dest="action", metavar="ACTION", parser_class=type(p))

    ls = cmds.add_parser("list", help="the rules in force and where they come from",
                         description="Print the rules a build of this data folder uses, in order, with their "
                         "source (<home>/categories.json or the built-in defaults) and the sha256 every document "
                         "names them by.")
    cli.common(ls)
    ls.set_defaults(func=_list)

    im = cmds.add_parser("import", help="copy a rules file (ActivityWatch's export) to <home>/categories.json",
                         description="Check FILE (every rule must load; an unusable one is named with its number "
                         "and the reason, exit 2) and copy it to <home>/categories.json. FILE is ActivityWatch's "
                         "export (web UI: Settings > Categorization > Export; or the server settings' classes "
                         "list) or this project's {\"rules\": [...]}. Days built afterwards use it; days already "
                         "published keep the categories they were built with.")
    im.add_argument("file", metavar="FILE", help="the rules file to import")
    im.add_argument("--replace", action="store_true", help="overwrite an existing <home>/categories.json")
    cli.common(im)
    im.set_defaults(func=_import)

    te = cmds.add_parser("test", help="which frames a rule would take, and from which category",
                         description=_TEST_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    te.add_argument("rule", metavar="RULE_OR_PATTERN",
                    help="title:REGEX, app:REGEX, site:REGEX, a bare REGEX (any field), or a JSON rule object")
    _days(te)
    te.add_argument("--category", metavar="PATH", help="the category to try it as, e.g. \"Media > Video\" "
                    "(default: the rule object's own, or Tested for a pattern)")
    te.add_argument("--match-case", action="store_true", help="a pattern's case counts (default: ignored)")
    te.add_argument("--first", action="store_true", help="add it before the rules in force (it wins ties)")
    te.add_argument("--frames", type=int, default=20, metavar="N", help="list at most N frames (default 20)")
    cli.common(te)
    te.set_defaults(func=_test)

    un = cmds.add_parser("uncategorized", help="the apps no rule takes, most minutes first",
                         description="The apps of the frames no rule in force takes, with their minutes (per "
                         "monitor), frames, days and the window title with the most of those minutes: where a "
                         "new rule would help most. Default: every logged day.")
    _days(un)
    un.add_argument("--top", type=int, default=15, metavar="N", help="how many apps to list (default 15)")
    cli.common(un)
    un.set_defaults(func=_uncategorized)

    p.set_defaults(func=lambda _args: p.print_help() or 2)


def _days(p: argparse.ArgumentParser) -> None:
    p.add_argument("--day", metavar="DAY", help="one logged day, YYYY-MM-DD")
    p.add_argument("--from", dest="start", metavar="DAY", help="first day of a range (inclusive)")
    p.add_argument("--to", dest="end", metavar="DAY", help="last day of a range (inclusive)")


def _where(force: Any) -> str:
    if force.path is None:
        return "the built-in defaults (no categories.json in the data folder)"
    return f"the rules of {force.path} ({force.fmt} format)"


def _list(args: argparse.Namespace) -> int:
    from af_pipeline.interfaces.category_rules import in_force

    force = in_force(resolve_home(args.home))
    rules = force.rules
    if args.json:
        cli.emit_json({"source": str(force.path) if force.path else "defaults", "format": force.fmt,
                       "sha256": rules.sha256, "rules": [
                           {"rule": r.name, "category": list(r.category), "patterns": [list(p) for p in r.patterns],
                            "ignore_case": r.ignore_case, "color": r.color} for r in rules.rules]})
        return 0
    print(f"{len(rules.rules)} rules: {_where(force)}, sha256 {rules.sha256[:12]}")
    print("pick: of every rule that matches, the deepest category, then the earlier rule")
    for r in rules.rules:
        color = f" [{r.color}]" if r.color else ""
        print(f"  {r.name:<18} {r.label}{color}\n  {'':<18}   {r.describe()}")
    return 0


def _import(args: argparse.Namespace) -> int:
    from af_pipeline.interfaces.category_rules import import_rules

    force = import_rules(resolve_home(args.home), Path(args.file), replace=args.replace)
    if args.json:
        cli.emit_json({"imported": args.file, "into": str(force.path), "format": force.fmt,
                       "rules": len(force.rules.rules), "sha256": force.rules.sha256})
        return 0
    print(f"imported {len(force.rules.rules)} rules ({force.fmt} format) from {args.file} into {force.path}")
    print("af build uses them for the days it builds; days already published keep the categories they were "
          "built with (docs/views.md)")
    return 0


def _documents(args: argparse.Namespace) -> tuple[Any, list[tuple[str, dict[str, Any]]]]:
    from af_pipeline.interfaces.category_rules import days_between, in_force
    from af_pipeline.interfaces.memory import Memory  # the read model: not for `af --help`

    home = resolve_home(args.home)
    memory = Memory(home)
    force = in_force(home)
    days = days_between(memory.days(), args.day, args.start, args.end)
    with memory.noting_skipped() as skipped:
        docs = [(d, memory.day_document(d)[0]) for d in days]
    cli.warn_skipped(f"categories {args.action}", skipped)
    return force, docs


def _test(args: argparse.Namespace) -> int:
    from af_pipeline.compiler import categories as C
    from af_pipeline.compiler.emit import printable  # no terminal escapes from a window title
    from capture.errors import UserError

    if args.frames < 0:
        raise UserError("--frames must be 0 or more")
    rule = C.rule_from_text(args.rule, args.category, ignore_case=not args.match_case)
    force, docs = _documents(args)
    found = C.trial(docs, rule, force.rules, first=args.first)
    groups: dict[str, list[Any]] = {}  # from category -> [frames, us, taken frames, taken us]
    for t in found:
        g = groups.setdefault(t.before.label if t.before else C.UNCATEGORIZED, [0, 0, 0, 0])
        us = round(t.frame["active_min"] * 60_000_000)
        g[0] += 1
        g[1] += us
        g[2] += t.takes
        g[3] += us if t.takes else 0
    rows = sorted(groups.items(), key=lambda kv: (-kv[1][1], kv[0]))
    taken = [t for t in found if t.takes]
    span = docs[0][0] if len(docs) == 1 else f"{docs[0][0]} .. {docs[-1][0]} ({len(docs)} days)"
    if args.json:
        cli.emit_json({
            "rule": {"category": list(rule.category), "patterns": [list(p) for p in rule.patterns],
                     "ignore_case": rule.ignore_case, "added": "first" if args.first else "last"},
            "rules_in_force": str(force.path) if force.path else "defaults", "days": [d for d, _ in docs],
            "matched": {"frames": len(found), "minutes": round(sum(g[1] for g in groups.values()) / 60_000_000, 2)},
            "taken": {"frames": len(taken), "minutes": round(sum(g[3] for g in groups.values()) / 60_000_000, 2)},
            "from": [{"category": label, "frames": g[0], "minutes": round(g[1] / 60_000_000, 2),
                      "taken_frames": g[2], "taken_minutes": round(g[3] / 60_000_000, 2)} for label, g in rows],
            "frames": [{"day": t.day, "id": t.frame["id"], "app": t.frame["app"], "start": t.frame["start"],
                        "end": t.frame["end"], "minutes": t.frame["active_min"],
                        "from": t.before.label if t.before else C.UNCATEGORIZED, "taken": t.takes}
                       for t in found[:args.frames]],
        })
        return 0
    print(f"{rule.label} <- {rule.describe()}, added {'first' if args.first else 'last'} to {_where(force)}")
    mins = sum(g[1] for g in groups.values()) / 60_000_000
    took = sum(g[3] for g in groups.values()) / 60_000_000
    print(f"{span}: it matches {len(found)} frame(s), {mins:.1f} min per monitor; it would take {len(taken)} "
          f"frame(s), {took:.1f} min")
    if not found:
        return 0
    width = max(len(label) for label, _g in rows)
    for label, g in rows:
        kept = g[0] - g[2]
        what = "taken" if not kept else ("kept: a deeper or earlier rule wins" if not g[2] else f"{g[2]} taken")
        print(f"  from {label:<{width}}  {g[0]:>4} frame(s) {g[1] / 60_000_000:>7.1f} min  {what}")
    shown = sorted(found, key=lambda t: (not t.takes, t.day, t.frame["start"]))[:args.frames]
    if shown:
        print("frames (taken first):")
    for t in shown:
        f = t.frame
        title = next((w["title"] for w in f.get("windows", ()) if w.get("title")), "")
        print(printable(f"  {t.day} {f['id']} {f['start']}-{f['end']} {f['active_min']:>6.1f} min  {f['app']}  "
                        f"{'taken from' if t.takes else 'stays in'} {t.before.label if t.before else C.UNCATEGORIZED}"
                        + (f"  \"{title}\"" if title else "")))
    if len(found) > len(shown):
        print(f"  ... {len(found) - len(shown)} more (--frames N)")
    return 0


def _uncategorized(args: argparse.Namespace) -> int:
    from af_pipeline.compiler import categories as C
    from af_pipeline.compiler.emit import printable  # no terminal escapes from a window title
    from capture.errors import UserError

    if args.top < 1:
        raise UserError("--top must be 1 or more")
    force, docs = _documents(args)
    rows, total = C.uncategorized_apps(docs, force.rules)
    left = round(sum(r.minutes for r in rows), 2)
    share = 100 * left / total if total else 0.0
    span = docs[0][0] if len(docs) == 1 else f"{docs[0][0]} .. {docs[-1][0]} ({len(docs)} days)"
    if args.json:
        cli.emit_json({"days": [d for d, _ in docs], "rules": str(force.path) if force.path else "defaults",
                       "minutes": total, "uncategorized_minutes": left, "share": round(share, 2),
                       "apps": [{"app": r.app, "minutes": r.minutes, "frames": r.frames, "days": r.days,
                                 "title": r.title} for r in rows[:args.top]]})
        return 0
    print(f"{span}: {left:.1f} of {total:.1f} min per monitor uncategorized ({share:.1f} %) under {_where(force)}")
    if not rows:
        return 0
    width = max(len("app"), *(len(r.app) for r in rows[:args.top]))
    print(f"  {'app':<{width}}  {'min':>7}  frames  days  most-seen title")
    for r in rows[:args.top]:
        print(printable(f"  {r.app:<{width}}  {r.minutes:>7.1f}  {r.frames:>6}  {r.days:>4}  {r.title or '-'}"))
    if len(rows) > args.top:
        print(f"  ... {len(rows) - args.top} more apps (--top N)")
    return 0
