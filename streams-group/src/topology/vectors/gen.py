# Random topologies for the differential vectors (see regen.sh): gen.py SEED N prints N cases.
import random, sys
seed = int(sys.argv[1]); n = int(sys.argv[2])
rnd = random.Random(seed)
out = []
for c in range(n):
    k = rnd.choice([1,1,2,2,3,3,4,5,6,8,13,14])
    ids = [str(i) for i in range(k)]
    if rnd.random() < 0.3: ids = [f"s{rnd.randint(0,99)}" for _ in range(k)]; ids = list(dict.fromkeys(ids))
    k = len(ids)
    ext = [f"t{i}" for i in range(rnd.randint(1,6))]
    uniform = rnd.random() < 0.5
    pool = [rnd.choice([1,2,3,4,6,8])] if uniform else [1,2,3,4,6,8]
    counts = {t: rnd.choice(pool) for t in ext}
    lines = ["case"]
    existing = {}
    for t in ext:
        if rnd.random() < 0.95: existing[t] = counts[t]
    # repartition topics: r_j written by sub a, read by sub b (mostly a<b)
    subs = {i: {"src": [], "rsrc": [], "sink": [], "cl": [], "groups": []} for i in range(k)}
    nrep = rnd.randint(0, k)
    for j in range(nrep):
        name = f"app-r{j}"
        a = rnd.randrange(k)
        b = rnd.randrange(k)
        if rnd.random() < 0.85 and k > 1:
            a, b = sorted(rnd.sample(range(k), 2))
        explicit = rnd.choice([0,0,0,0,2,3,4] + pool) if rnd.random() < 0.3 else 0
        if rnd.random() < 0.97: subs[a]["sink"].append(name)
        subs[b]["rsrc"].append((name, explicit))
        if rnd.random() < 0.15:
            existing[name] = rnd.choice(pool + [rnd.choice([1,2,3,4,6,8])])
    for i in range(k):
        s = subs[i]
        if not s["rsrc"] or rnd.random() < 0.6:
            for t in rnd.sample(ext, rnd.randint(1 if rnd.random() < 0.97 else 0, min(3, len(ext)))):
                s["src"].append(t)
        for m in range(rnd.choice([0,0,1,1,2,4])):
            name = f"app-{ids[i]}-c{m}" if rnd.random() > 0.01 else rnd.choice(["app#bad", ".", "x"*250])
            s["cl"].append((name, rnd.choice([0,0,0,0,0,5])))
            if rnd.random() < 0.2: existing[name] = rnd.choice(pool + [rnd.choice([1,2,3,4,6,8])])
        if rnd.random() < 0.4 and (len(s["src"]) + len(s["rsrc"])) >= 1:
            for g in range(rnd.randint(1,2)):
                si = sorted(rnd.sample(range(len(s["src"])), rnd.randint(0, len(s["src"]))))
                ri = sorted(rnd.sample(range(len(s["rsrc"])), rnd.randint(0, len(s["rsrc"]))))
                if rnd.random() < 0.02: si.append(len(s["src"]))
                s["groups"].append((si, ri))
    for t, p in existing.items():
        lines.append(f"topic {t} {p}")
    order = list(range(k)); rnd.shuffle(order)
    for i in order:
        s = subs[i]
        lines.append(f"sub {ids[i]}")
        for t in s["src"]: lines.append(f"src {t}")
        for t, p in s["rsrc"]: lines.append(f"rsrc {t} {p}")
        for t in s["sink"]: lines.append(f"sink {t}")
        for t, p in s["cl"]: lines.append(f"cl {t} {p}")
        for si, ri in s["groups"]:
            lines.append("group " + (",".join(map(str, si)) or "-") + " " + (",".join(map(str, ri)) or "-"))
    lines.append("end")
    out.append("\n".join(lines))
print("\n".join(out))
