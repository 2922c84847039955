"""Trial on real public captures: the product's per-app minutes against an
independent count (bench/trial/independent_count.py).

usage: python run_trial.py [--manifest /tmp/trial/manifest.json] [--work /tmp/trial/run]
                           [--af PATH] [--only NAME ...] [--skip-build] [--fresh]

The manifest is a JSON list of captures:
  {"name": "...", "path": "/tmp/trial/raw/x.json", "kind": "activitywatch"|"rpm",
   "tz": "Europe/Paris", "source": "repo URL + path", "platform": "...",
   "split": "dev"|"heldout"}

For each capture: independent count; `af import <kind> PATH --home H --tz Z`;
`af build --home H`; `af certify --home H`; `af day DAY --home H -f json` for
each day with capture; per app and day with >= 5 independent minutes:
relative error = |product - independent| / independent. Prints one table
per split and writes <work>/results.json (data stays under --work; nothing
here is meant to be committed but this script).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import independent_count  # noqa: E402  (a sibling script, not the product)

MIN_MINUTES = 5.0
DEFAULT_AF = str(HERE.parent.parent / ".venv" / "bin" / "af")


def run(cmd, timeout=1800):
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        rc, out, err = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = "timeout", exc.stdout or "", exc.stderr or ""
        out = out if isinstance(out, str) else out.decode(errors="replace")
        err = err if isinstance(err, str) else err.decode(errors="replace")
    return {"cmd": " ".join(cmd), "rc": rc, "stdout": out, "stderr": err,
            "seconds": round(time.monotonic() - t0, 2)}


def error_lines(res, n=8):
    """The lines of a failed step worth reading: errors, FAIL, refusals."""
    text = (res.get("stdout") or "") + "\n" + (res.get("stderr") or "")
    keys = ("error", "fail", "refus", "exit", "traceback", "exception", "cannot",
            "nothing usable", "check", "blocking")
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    hits = [ln for ln in lines if any(k in ln.lower() for k in keys)]
    return (hits or lines[-n:])[:n]


def product_apps(af, home, day):
    res = run([af, "day", day, "--home", home, "-f", "json"], timeout=600)
    if res["rc"] != 0:
        return None, None, res
    try:
        doc = json.loads(res["stdout"])
    except json.JSONDecodeError:
        return None, None, res
    apps = {a["app"]: a for a in doc.get("apps", [])}
    return ({k: float(v.get("minutes", 0.0)) for k, v in apps.items()},
            {k: float(v.get("timeline_minutes", v.get("minutes", 0.0))) for k, v in apps.items()},
            res)


def compare(mine_days, prod_by_day):
    rows = []
    for day, apps in sorted(mine_days.items()):
        prod = prod_by_day.get(day)
        for app, secs in sorted(apps.items(), key=lambda kv: -kv[1]):
            m = secs / 60.0
            if m < MIN_MINUTES:
                continue
            p = None if prod is None else prod.get(app, 0.0)
            err = None if p is None else abs(p - m) / m
            rows.append({"day": day, "app": app, "independent_min": round(m, 3),
                         "product_min": p, "rel_err": err})
    return rows


def trial_one(cap, af, work, skip_build, fresh):
    name = cap["name"]
    home = str(Path(work) / name / "home")
    if fresh and Path(home).exists():
        shutil.rmtree(home)
    Path(home).parent.mkdir(parents=True, exist_ok=True)
    out = {"name": name, "source": cap.get("source", ""), "platform": cap.get("platform", ""),
           "kind": cap["kind"], "tz": cap["tz"], "split": cap.get("split", "dev"),
           "size_bytes": os.path.getsize(cap["path"])}
    ind = independent_count.count(cap["path"], cap["kind"], cap["tz"])
    out["rows"] = ind["rows"]
    out["independent_notes"] = ind["notes"]
    out["independent_days"] = sorted(ind["days"])
    imp = run([af, "import", cap["kind"], cap["path"], "--home", home, "--tz", cap["tz"]])
    out["import"] = {"rc": imp["rc"], "seconds": imp["seconds"], "lines": error_lines(imp, 12)
                     if imp["rc"] != 0 else [],
                     "summary": [ln for ln in imp["stdout"].splitlines()
                                 if "quarantin" in ln.lower() or ln.strip()[:1].isdigit()][:20]}
    steps = {}
    if not skip_build and imp["rc"] == 0:
        for step in ("build", "certify"):
            r = run([af, step, "--home", home])
            steps[step] = {"rc": r["rc"], "seconds": r["seconds"],
                           "lines": error_lines(r) if r["rc"] != 0 else []}
    out.update(steps)
    pub = Path(home) / "published"
    out["published_days"] = sorted(p.name for p in pub.iterdir() if p.is_dir()) if pub.exists() else []
    prod_min, prod_tl, day_fail = {}, {}, {}
    if imp["rc"] == 0:
        for day in ind["days"]:
            m, tl, r = product_apps(af, home, day)
            if m is None:
                day_fail[day] = error_lines(r)
            else:
                prod_min[day], prod_tl[day] = m, tl
    out["day_failures"] = day_fail
    cmp_rows = compare(ind["days"], prod_min)
    if cap["kind"] == "rpm" and ind.get("timeline_days"):
        out["timeline_compare"] = compare(ind["timeline_days"], prod_tl)
    if ind.get("naive_days"):
        out["naive_compare"] = compare(ind["naive_days"], prod_min)
    out["compare"] = cmp_rows
    errs = [r["rel_err"] for r in cmp_rows if r["rel_err"] is not None]
    # every app, whatever its size: absolute minutes apart and apps one side lacks
    allabs, only_ind, only_prod = 0.0, [], []
    for day, apps in ind["days"].items():
        prod = prod_min.get(day, {})
        for app, secs in apps.items():
            allabs += abs(prod.get(app, 0.0) - secs / 60.0)
            if app not in prod and secs >= 30:
                only_ind.append(f"{day} {app} {secs / 60:.2f}")
        for app, m in prod.items():
            if app not in apps and m > 0:
                allabs += m
                only_prod.append(f"{day} {app} {m:.2f}")
    out["all_apps_abs_diff_min"] = round(allabs, 3)
    out["apps_only_independent"] = only_ind
    out["apps_only_product"] = only_prod
    out["apps_compared"] = len(errs)
    out["max_err_pct"] = round(100 * max(errs), 3) if errs else None
    out["mean_err_pct"] = round(100 * sum(errs) / len(errs), 3) if errs else None
    return out


def table(results):
    hdr = ["capture", "source", "rows", "imp", "build", "cert", "pub days", "apps",
           "max err %", "mean err %", "all-apps |diff| min"]
    lines = [hdr]
    for r in results:
        lines.append([r["name"], r["source"], str(r["rows"]), str(r["import"]["rc"]),
                      str(r.get("build", {}).get("rc", "-")),
                      str(r.get("certify", {}).get("rc", "-")),
                      str(len(r["published_days"])), str(r["apps_compared"]),
                      "-" if r["max_err_pct"] is None else f"{r['max_err_pct']:.3f}",
                      "-" if r["mean_err_pct"] is None else f"{r['mean_err_pct']:.3f}",
                      f"{r['all_apps_abs_diff_min']:.2f}"])
    widths = [max(len(row[i]) for row in lines) for i in range(len(hdr))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) for row in lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--manifest", default="/tmp/trial/manifest.json")
    ap.add_argument("--work", default="/tmp/trial/run")
    ap.add_argument("--af", default=DEFAULT_AF)
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--split", default="all", help="dev, heldout, stress, ... or all")
    ap.add_argument("--skip-build", action="store_true")
    ap.add_argument("--fresh", action="store_true", help="delete each capture's home first")
    a = ap.parse_args(argv)
    caps = json.loads(Path(a.manifest).read_text())
    if a.only:
        caps = [c for c in caps if c["name"] in a.only]
    if a.split != "all":
        caps = [c for c in caps if c.get("split", "dev") == a.split]
    results = []
    for cap in caps:
        print(f"-- {cap['name']}", file=sys.stderr, flush=True)
        r = trial_one(cap, a.af, a.work, a.skip_build, a.fresh)
        results.append(r)
        for step in ("import", "build", "certify"):
            s = r.get(step)
            if s and s["rc"] != 0:
                print(f"   {step} exit {s['rc']}: " + " | ".join(s["lines"][:4]), file=sys.stderr)
    Path(a.work).mkdir(parents=True, exist_ok=True)
    (Path(a.work) / "results.json").write_text(json.dumps(results, indent=1, ensure_ascii=False))
    splits = []
    for r in results:
        if r["split"] not in splits:
            splits.append(r["split"])
    for split in splits:
        part = [r for r in results if r["split"] == split]
        if part:
            print(f"\n== {split}")
            print(table(part))
    worst = sorted((row for r in results for row in r["compare"] if row["rel_err"] is not None),
                   key=lambda x: -x["rel_err"])[:10]
    if worst:
        print("\nlargest per-app errors:")
        for r in results:
            for row in r["compare"]:
                if row in worst and row["rel_err"] > 0.001:
                    print(f"  {r['name']} {row['day']} {row['app']}: product "
                          f"{row['product_min']} vs independent {row['independent_min']} "
                          f"({100 * row['rel_err']:.2f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
