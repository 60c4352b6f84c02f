#!/usr/bin/env python3
"""Issue 46's new round: ~300 crafted run and lab directories, each read by
report in six output modes and by compare, under a 4 GB address-space limit.
Counts panics, aborts, hangs, writes outside the case directory, multi-line
refusals, and the largest RSS.

Usage: scripts/hostile_round.py PAGELAB LAB_DIR [N] [WORK]
  PAGELAB  the binary to try (a release build)
  LAB_DIR  a real lab directory to mutate (`pagelab lab --smoke --out DIR`);
           it must stay unchanged (checked after every case)
  N        how many crafted directories (default 300)
  WORK     a scratch folder (default /tmp/h300), emptied of its cases
Links are planted only toward WORK/victim, checked after every case too.
Needs root only as pagelab does; run it on a quiet machine."""
import json, os, random, shutil, subprocess, sys, hashlib, stat, glob, time
BIN = sys.argv[1]
BASE = sys.argv[2]
WORK = sys.argv[4] if len(sys.argv) > 4 else "/tmp/h300"
ROOT = WORK + "/cases"
VICTIM = WORK + "/victim"
N = int(sys.argv[3]) if len(sys.argv) > 3 else 300
os.makedirs(WORK, exist_ok=True)
rnd = random.Random(46)
shutil.rmtree(ROOT, ignore_errors=True); os.makedirs(ROOT)
shutil.rmtree(VICTIM, ignore_errors=True); os.makedirs(VICTIM + "/sub")
open(VICTIM + "/secret", "w").write("secret\n"); os.chmod(VICTIM + "/secret", 0o600)
open(VICTIM + "/sub/run.json", "w").write(open(BASE + "/eat/run.json").read())
open(VICTIM + "/sub/eat.md", "w").write("victim md\n")
def tree_sig(d):
    h = hashlib.sha256()
    for r, ds, fs in sorted(os.walk(d)):
        for f in sorted(fs + ds):
            p = os.path.join(r, f); st = os.lstat(p)
            h.update(f"{p} {st.st_mode} {st.st_size} {st.st_mtime_ns}".encode())
    return h.hexdigest()
victim_sig = tree_sig(VICTIM); base_sig = tree_sig(BASE)
# What WORK held before the first case (a log the caller put there): not a write by pagelab.
initial = set(os.listdir(WORK))
STEPS = [d for d in sorted(os.listdir(BASE)) if os.path.isfile(os.path.join(BASE, d, "run.json"))]
EXTREME = [1e308, -1e308, 1e-308, 5e-324, 0, -1, 0.0, 18446744073709551615, 18446744073709551616,
           -9223372036854775809, 10**40, 1e300, -1e-300, 4294967295, 2**53 + 1]
ODD = ["", "\u0000", "x" * 100000, "\u202eevil", "</script><script>alert(1)</script>", "<svg onload=alert(1)>",
       "`a`b`", "\"quoted\"", "../../etc/passwd", "/etc/shadow", "a\nb\r\nc", "\ud7ff\ue000", "NaN", "-inf", "🦀" * 1000]
def walk_json(v, fn, path=()):
    if isinstance(v, dict):
        for k in list(v): v[k] = walk_json(v[k], fn, path + (k,))
    elif isinstance(v, list):
        for i in range(len(v)): v[i] = walk_json(v[i], fn, path + (i,))
    return fn(v, path)
def mutate_json(doc, kind, rate):
    def fn(v, path):
        if rnd.random() > rate: return v
        if kind == "num" and isinstance(v, (int, float)) and not isinstance(v, bool): return rnd.choice(EXTREME)
        if kind == "str" and isinstance(v, str): return rnd.choice(ODD)
        if kind == "type": return rnd.choice([None, [], {}, "str", True, -1, [None], {"x": None}])
        return v
    return walk_json(doc, fn)
def dump(doc):
    t = json.dumps(doc, allow_nan=True)
    return t
def write(p, text, raw=False):
    if os.path.islink(p) or os.path.exists(p):
        if os.path.isdir(p) and not os.path.islink(p): shutil.rmtree(p)
        else: os.remove(p)
    open(p, "wb" if raw else "w").write(text)
def replace_file(p, how):
    if os.path.lexists(p):
        if os.path.isdir(p) and not os.path.islink(p): shutil.rmtree(p)
        else: os.remove(p)
    if how == "link_secret": os.symlink(VICTIM + "/secret", p)
    elif how == "link_dir": os.symlink(VICTIM, p)
    elif how == "link_zero": os.symlink("/dev/zero", p)
    elif how == "dangling": os.symlink("/nonexistent/x", p)
    elif how == "fifo": os.mkfifo(p)
    elif how == "dir": os.makedirs(p)
    elif how == "empty": open(p, "w").close()
    elif how == "garbage": open(p, "wb").write(bytes(rnd.randrange(256) for _ in range(5000)))
    elif how == "sparse_big":
        with open(p, "wb") as f: f.truncate((32 << 20) + 1)
    elif how == "invalid_utf8": open(p, "wb").write(b'{"format":1,"experiment":"\xff\xfe","results":[]}')
FILE_HOWS = ["link_secret", "link_dir", "link_zero", "dangling", "fifo", "dir", "empty", "garbage", "sparse_big", "invalid_utf8"]
def new_run_case(i):
    step = rnd.choice(STEPS); d = os.path.join(ROOT, f"c{i:03d}")
    shutil.copytree(os.path.join(BASE, step), d, symlinks=True)
    return d, step
def new_lab_case(i):
    d = os.path.join(ROOT, f"c{i:03d}"); shutil.copytree(BASE, d, symlinks=True); return d
def load(p): return json.load(open(p))
def mk_case(i):
    k = i % 15
    if k == 0:  # run.json numbers to extremes
        d, s = new_run_case(i); p = d + "/run.json"; write(p, dump(mutate_json(load(p), "num", 0.3))); return d, f"run {s}: numbers to extremes"
    if k == 1:
        d, s = new_run_case(i); p = d + "/run.json"; write(p, dump(mutate_json(load(p), "str", 0.3))); return d, f"run {s}: strings to odd values"
    if k == 2:
        d, s = new_run_case(i); p = d + "/run.json"; write(p, dump(mutate_json(load(p), "type", 0.05))); return d, f"run {s}: values to other types"
    if k == 3:
        d, s = new_run_case(i); f = rnd.choice(["run.json", "samples.jsonl", "events.jsonl", f"{s.split('-')[0]}.md", "timeline.csv", "report.html"])
        how = rnd.choice(FILE_HOWS); replace_file(os.path.join(d, f), how); return d, f"run {s}: {f} as {how}"
    if k == 4:  # jsonl line mutations
        d, s = new_run_case(i); f = rnd.choice(["samples.jsonl", "events.jsonl"]); p = os.path.join(d, f)
        lines = open(p).read().splitlines(); out = []
        for l in lines:
            r = rnd.random()
            try: doc = json.loads(l)
            except Exception: out.append(l); continue
            if r < 0.2: out.append(dump(mutate_json(doc, "num", 0.3)))
            elif r < 0.3: out.append(l[: rnd.randrange(len(l) + 1)])
            elif r < 0.4: out.append(dump(mutate_json(doc, "type", 0.1)))
            elif r < 0.45: out.append("\x00" * 10 + l)
            else: out.append(l)
        rnd.shuffle(out) if rnd.random() < 0.3 else None
        write(p, "\r\n".join(out) if rnd.random() < 0.2 else "\n".join(out)); return d, f"run {s}: {f} lines mutated"
    if k == 5:  # memory: heavy contents within file limits
        d, s = new_run_case(i); choice = rnd.randrange(4)
        if choice == 0:
            doc = load(d + "/run.json"); txt = dump(doc).replace('"results": [', '"results": [' + "[" + ",".join(["0"] * rnd.choice([10**5, 10**6, 5 * 10**6])) + "],", 1)
            write(d + "/run.json", txt); return d, f"run {s}: results with a big zero array"
        if choice == 1:
            doc = load(d + "/run.json"); txt = dump(doc).replace('"results": [', '"results": [' + ",".join(["{}"] * rnd.choice([10**4, 10**5, 10**6])) + ",", 1)
            write(d + "/run.json", txt); return d, f"run {s}: many empty result entries"
        if choice == 2:
            line = '{"t_ns":1,"kind":"info","name":"x","detail":{' + ",".join(f'"k{j}":[0]' for j in range(rnd.choice([1000, 50000, 200000]))) + "}}\n"
            write(d + "/events.jsonl", line * rnd.choice([5, 50, 200])); return d, f"run {s}: events with wide objects"
        pid = '{"pid":1}'
        line = '{"t_ns":%d,"psi":{},"pids":[' + ",".join([pid] * rnd.choice([100, 5000, 20000])) + "]}\n"
        with open(d + "/samples.jsonl", "w") as f:
            for t in range(rnd.choice([100, 1000, 5000])): f.write(line % t)
        return d, f"run {s}: samples with many processes"
    if k == 6:  # deep nesting
        d, s = new_run_case(i); depth = rnd.choice([126, 127, 128, 129, 5000])
        doc = load(d + "/run.json"); txt = dump(doc).replace('"results": [', '"results": [' + "[" * depth + "]" * depth + ",", 1)
        write(d + "/run.json", txt); return d, f"run {s}: results nested {depth} deep"
    if k == 7:  # svg and md in a run dir
        d, s = new_run_case(i); which = rnd.randrange(3)
        if which == 0:
            for j in range(rnd.choice([5, 30, 100])): write(d + f"/z{j}.svg", '<svg xmlns="http://www.w3.org/2000/svg"><foreignObject><form action="https://evil"/></foreignObject></svg>')
            return d, f"run {s}: many crafted SVGs"
        if which == 1:
            write(d + "/big.svg", "<svg>" + "A" * (5 << 20) + "</svg>"); return d, f"run {s}: a 5 MiB SVG"
        write(d + f"/{s.split('-')[0]}.md", "| a | b |\n|---|---|\n" + "| <script>x</script> | `q` |\n" * rnd.choice([10, 100000])); return d, f"run {s}: a crafted Markdown table"
    # lab cases
    d = new_lab_case(i); lab = load(d + "/lab.json")
    if k == 8:
        write(d + "/lab.json", dump(mutate_json(lab, "num", 0.3))); return d, "lab: lab.json numbers to extremes"
    if k == 9:
        write(d + "/lab.json", dump(mutate_json(lab, "str", 0.2))); return d, "lab: lab.json strings to odd values"
    if k == 10:
        st = rnd.choice(lab["steps"]); st["dir"] = rnd.choice(["../victim", "/tmp/h300/victim", "x/sub", "", ".", "a" * 300, "eat/../wscap", "🦀", "victimlink", None])
        if st["dir"] == "victimlink": os.symlink(VICTIM, d + "/victimlink")
        if st["dir"] == "x/sub": os.symlink(VICTIM, d + "/x")
        write(d + "/lab.json", dump(lab)); return d, f"lab: a step dir {str(st['dir'])[:20]!r}"
    if k == 11:
        choice = rnd.randrange(5)
        if choice == 0: lab["passes"] = rnd.choice([0, 3, 8, 9, 2**32, -1, 1e300])
        elif choice == 1: lab["pass_weights"] = rnd.choice([[], [0, 0], [1e300, -1], [None, 1], [1] * 100])
        elif choice == 2: lab["steps"] = lab["steps"] * rnd.choice([2, 5, 10])
        elif choice == 3:
            for st in lab["steps"]: st["pass"] = rnd.choice([0, 1, 2, 3, 99, -1])
        else:
            for st in lab["steps"]: st["experiment"] = rnd.choice(["eat", "nope", "", "thrash", "assess"])
        write(d + "/lab.json", dump(lab)); return d, f"lab: passes/steps mutation {choice}"
    if k == 12:
        s = rnd.choice(STEPS); f = rnd.choice(["run.json", "samples.jsonl", "events.jsonl"]); how = rnd.choice(FILE_HOWS)
        replace_file(os.path.join(d, s, f), how); return d, f"lab: {s}/{f} as {how}"
    if k == 13:
        s = rnd.choice(STEPS); how = rnd.choice(["link_dir", "fifo", "empty", "dangling", "garbage"])
        replace_file(os.path.join(d, s), how) if how != "garbage" else replace_file(os.path.join(d, "lab.json"), "garbage")
        return d, f"lab: step {s} as {how}"
    for s in rnd.sample(STEPS, 3):
        p = os.path.join(d, s, "run.json"); write(p, dump(mutate_json(load(p), rnd.choice(["num", "type"]), 0.1)))
    return d, "lab: three runs' values mutated"
MODES = [[], ["--json"], ["--markdown"], ["--html"], ["--bmf", "-"], ["--openmetrics", "-"]]
stats = {"cases": 0, "invocations": 0, "ok": 0, "refused": 0, "panics": 0, "aborts": 0, "hangs": 0, "other": 0, "multiline_refusals": 0}
max_rss = (0, ""); problems = []
t0 = time.time()
for i in range(N):
    d, what = mk_case(i); stats["cases"] += 1
    cmds = [["report", d] + m for m in MODES] + [["compare", d, BASE], ["compare", d, d, "--json"]]
    for c in cmds:
        stats["invocations"] += 1
        r = subprocess.run(["bash", "-c", 'ulimit -v 4000000; exec /usr/bin/time -f "%M" -o ' + WORK + '/rss timeout 60 "$@"', "_", BIN] + c,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        err = r.stderr.decode(errors="replace")
        try: rss = int(open(WORK + "/rss").read().split()[-1])
        except Exception: rss = 0
        if rss > max_rss[0]: max_rss = (rss, f"{what}: {' '.join(c[:1] + c[2:])}")
        rc = r.returncode
        if "panicked" in err or rc == 101: stats["panics"] += 1; problems.append(("panic", what, c, err[-400:]))
        elif "memory allocation" in err or rc in (134, 137, 139) or rc < 0: stats["aborts"] += 1; problems.append(("abort", what, c, err[-400:]))
        elif rc == 124: stats["hangs"] += 1; problems.append(("hang", what, c, err[-200:]))
        elif rc == 0: stats["ok"] += 1
        elif rc == 2:
            stats["refused"] += 1
            lines = [l for l in err.splitlines() if l.strip() and not l.startswith("Command exited")]
            if len(lines) != 1: stats["multiline_refusals"] += 1; problems.append(("multiline", what, c, err[-400:]))
        else: stats["other"] += 1; problems.append((f"exit {rc}", what, c, err[-400:]))
    # Writes outside: the victim tree, the base lab, and nothing new beside the case dirs.
    if tree_sig(VICTIM) != victim_sig: problems.append(("WRITE OUTSIDE (victim)", what, [], "")); victim_sig = tree_sig(VICTIM)
    if tree_sig(BASE) != base_sig: problems.append(("WRITE OUTSIDE (base lab)", what, [], "")); base_sig = tree_sig(BASE)
    extra = set(os.listdir(WORK)) - initial - {"cases", "victim", "rss", "result.json"}
    if extra: problems.append(("WRITE OUTSIDE (the work folder)", what, [], str(extra)))
    if d and os.path.isdir(d) and i % 10 != 0: shutil.rmtree(d, ignore_errors=True)
    if i % 25 == 0: print(f"{i} cases, {stats}, {time.time()-t0:.0f} s", flush=True)
stats["max_rss_kb"] = max_rss[0]; stats["max_rss_case"] = max_rss[1]; stats["seconds"] = round(time.time() - t0)
print(json.dumps(stats, indent=1))
for p in problems[:60]: print(p)
json.dump({"stats": stats, "problems": problems}, open(WORK + "/result.json", "w"), indent=1)
