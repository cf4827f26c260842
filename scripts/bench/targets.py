"""The targets of Samsa's issues checked against one run of scripts/bench/bench.py: issue 7's
(against the discard sink and the machine's limits) and issue 46's (against Apache Kafka 4.4 in
the same run), and the `×Kafka` ratios of the results table. Python 3 stdlib only.
"""


def cpu_floor(results, limits, test):
    """What any broker that writes records into the page cache must spend per million records
    of `test` on this machine: the discard sink's CPU per million records of that size
    (receive, decode, acknowledge; the median over its uncompressed produce scenarios of that
    size, which all do the same work per record, because single sink figures swing by 2x on
    this VM) plus the append-shaped buffered-write probe's CPU for the bytes stored. None when
    the run lacks either."""
    size_name = test.split(".")[1]
    size = {"1KiB": 1024, "100B": 100}.get(size_name)
    sink = sorted(r["cpu_s_per_M"] for r in results
                  if r["broker"] == "discard-sink" and r.get("cpu_s_per_M") is not None
                  and r["test"].startswith(("produce.", "producers_"))
                  and r["test"].split(".")[1] == size_name
                  and not r["test"].endswith((".lz4", ".zstd")))
    write = limits.get("disk_write_buffered_appends", {}).get("cpu_s_per_GiB")
    if not sink or write is None or size is None:
        return None
    return sink[len(sink) // 2], write * size * 1e6 / (1 << 30)


#: The probes that move a loopback stream into a file in different ways (samsa-bench-limits).
MOVE_PROBES = ("copy", "splice", "mmap", "direct")


def move_floor(limits, test):
    """The CPU the cheapest way this machine has of moving a loopback stream into a file
    (`socket_to_file_{copy,splice,mmap,direct}`, receiver at full speed, best of three passes
    each) spends on the payload bytes of a million records of `test`, before any broker work:
    (CPU seconds, the way's name), or None when the run lacks the probes."""
    size = {"1KiB": 1024, "100B": 100}.get(test.split(".")[1])
    ways = [(limits[f"socket_to_file_{w}"]["cpu_s_per_GiB"], w) for w in MOVE_PROBES
            if "cpu_s_per_GiB" in limits.get(f"socket_to_file_{w}", {})]
    if not ways or size is None:
        return None
    per_gib, way = min(ways)
    return per_gib * size * 1e6 / (1 << 30), way


def target_checks(results, limits=None):
    """The issue's targets for the broker, checked against this run: (target, broker, figure,
    met). Only what the run measured is checked."""
    def find(test, broker):
        for r in results:
            if r["test"] == test and r["broker"] == broker and r.get("msgs_per_s") \
                    and not r["status"].startswith("failed"):
                return r
        return None

    checks = []
    samsa = [b for b in dict.fromkeys(r["broker"] for r in results)
             if b.startswith("samsa-") and not b.endswith("-durable")]
    baseline = [b for b in dict.fromkeys(r["broker"] for r in results) if b.startswith("tansu")]
    for b in samsa:
        for test in ("produce.1KiB.acks_all.p1", "produce.100B.acks_all.p1",
                     "produce.1KiB.acks_all.p1.linger5", "produce.100B.acks_all.p1.linger5"):
            r = find(test, b)
            if r and r.get("of_sink") is not None:
                checks.append((f"{test} at >= 90% of the discard sink", b,
                               f"{r['of_sink']:.0%}", r["of_sink"] >= 0.9))
        r = find("consume.1KiB.assigned", b)
        if r:
            figure = f"{r['msgs_per_s']:,}"
            sink = find("consume.1KiB.assigned", "discard-sink")
            if sink:
                # The consumer's own ceiling here: above it no broker can be measured.
                figure += f" (discard sink {sink['msgs_per_s']:,})"
            checks.append(("consume 1 KiB records at >= 2M records/s", b,
                           figure, r["msgs_per_s"] >= 2_000_000))
        for r in (find("produce.1KiB.acks_all.p1", b), find("produce.1KiB.acks_all.p1.linger5", b)):
            if not r or r.get("cpu_s_per_M") is None:
                continue
            figure = f"{r['cpu_s_per_M']:.2f} s"
            floor = cpu_floor(results, limits or {}, r["test"])
            notes = []
            if floor:
                notes.append(f"floor {sum(floor):.2f}: sink {floor[0]:.2f} + page-cache "
                             f"writes {floor[1]:.2f}")
            moved = move_floor(limits or {}, r["test"])
            if moved:
                notes.append(f"moving the bytes alone, cheapest way ({moved[1]}): "
                             f"{moved[0]:.2f}")
            if notes:
                figure += " (" + "; ".join(notes) + ")"
            checks.append((f"{r['test']}: broker CPU < 0.3 s per million 1 KiB records", b,
                           figure, r["cpu_s_per_M"] < 0.3))
        for rate, bound in ((1000, 1.0), (50000, 5.0)):
            r = find(f"e2e.100B.rate_{rate}", b)
            if r and r.get("produce_p99_ms") is not None:
                figure = f"{r['produce_p99_ms']:.2f} ms"
                if r.get("broker_produce_p99_ms") is not None:
                    figure += f" (the broker's own handling: p99 <= {r['broker_produce_p99_ms']:g} ms)"
                checks.append((f"produce p99 at {rate:,} records/s (acks=all, linger 0) < "
                               f"{bound:g} ms", b, figure, r["produce_p99_ms"] < bound))
        durable = find("producers_8.1KiB.acks_all.p8", f"{b}-durable")
        default = find("producers_8.1KiB.acks_all.p8", b)
        if durable and default:
            frac = durable["msgs_per_s"] / default["msgs_per_s"]
            checks.append(("durable mode >= 70% of default throughput, 8 producers", b,
                           f"{frac:.0%}", frac >= 0.7))
        for base in baseline:
            behind = []
            for r in results:
                if r["broker"] != b or not r.get("msgs_per_s"):
                    continue
                other = find(r["test"], base)
                if not other:
                    continue
                if r["kind"] == "e2e":
                    if (r.get("p99_ms") or 0) > (other.get("p99_ms") or float("inf")):
                        behind.append(r["test"])
                elif r["msgs_per_s"] < other["msgs_per_s"]:
                    behind.append(r["test"])
            checks.append((f"every figure ahead of {base}", b,
                           "behind in " + ", ".join(behind) if behind else "ahead in all",
                           not behind))
    return checks


# ---------------------------------------------------------------------------------------------
# Samsa against Kafka in the same run

PRODUCE_KINDS = ("produce", "multi", "many", "ktproduce", "tail")


def counterpart(broker):
    """The Kafka target a samsa row is compared with: the durable pair with each other."""
    if not broker.startswith("samsa-"):
        return None
    return "kafka-durable" if broker.endswith("-durable") else "kafka"


def find(results, test, broker):
    for r in results:
        if r["test"] == test and r["broker"] == broker and r.get("msgs_per_s") \
                and not r["status"].startswith(("failed", "skipped")):
            return r
    return None


def ratio(a, b):
    return a / b if a is not None and b else None


def versus(r, results):
    """A samsa row against Kafka's same row: (records/s ratio, Kafka's CPU per record over
    samsa's, samsa's RSS over Kafka's, samsa's p99 over Kafka's); None without a Kafka row."""
    other = counterpart(r["broker"])
    k = find(results, r["test"], other) if other else None
    if k is None or r["status"].startswith(("failed", "skipped")):
        return None
    return (ratio(r.get("msgs_per_s"), k.get("msgs_per_s")),
            ratio(k.get("cpu_s_per_M"), r.get("cpu_s_per_M")),
            ratio(r.get("broker_rss_MiB"), k.get("broker_rss_MiB")),
            ratio(r.get("p99_ms"), k.get("p99_ms")))


def x(v):
    return "-" if v is None else f"{v:.2f}x"


def checks(results):
    """Issue 46's targets against Kafka in this run: (target, broker, figure, met)."""
    out = []
    samsa = [b for b in dict.fromkeys(r["broker"] for r in results) if counterpart(b)]
    for b in samsa:
        k = counterpart(b)
        pairs = [(r, find(results, r["test"], k)) for r in results if r["broker"] == b]
        pairs = [(r, o) for r, o in pairs if o is not None
                 and not r["status"].startswith(("failed", "skipped"))]
        if not pairs:
            continue

        def check(what, rows):
            if rows:
                misses = [t for t, f, met in rows if not met]
                text = "; ".join(f"{t} {f}" for t, f, met in rows if not met) or \
                    f"all {len(rows)} rows: " + ", ".join(f"{t} {f}" for t, f, _ in rows)
                out.append((what, b, ("miss: " + text) if misses else text, not misses))

        cpu = [(r["test"], x(ratio(o["cpu_s_per_M"], r["cpu_s_per_M"])),
                ratio(o["cpu_s_per_M"], r["cpu_s_per_M"]) >= 1.5) for r, o in pairs
               if r["kind"] in PRODUCE_KINDS + ("consume",) and r.get("cpu_s_per_M")
               and o.get("cpu_s_per_M")]
        check(f"records per broker CPU-second >= 1.5x {k}'s (produce and consume rows)", cpu)
        rss = [(r["test"], f"{r['broker_rss_MiB']:.0f}/{o['broker_rss_MiB']:.0f} MiB",
                r["broker_rss_MiB"] <= o["broker_rss_MiB"] / 10) for r, o in pairs
               if r["kind"] in PRODUCE_KINDS and r.get("broker_rss_MiB") and o.get("broker_rss_MiB")]
        check(f"RSS after produce rows <= 1/10 of {k}'s", rss)
        for r, o in pairs:
            if r["test"] == "e2e.100B.rate_1000" and r.get("produce_p99_ms") and o.get("produce_p99_ms"):
                out.append((f"produce p99 at 1,000 records/s (acks=all) below {k}'s", b,
                            f"{r['produce_p99_ms']:.2f} ms vs {o['produce_p99_ms']:.2f} ms "
                            f"(e2e p99 {r.get('p99_ms') or 0:.2f} vs {o.get('p99_ms') or 0:.2f})",
                            r["produce_p99_ms"] < o["produce_p99_ms"]))
        thr = [(r["test"], x(ratio(r["msgs_per_s"], o["msgs_per_s"])),
                r["msgs_per_s"] >= o["msgs_per_s"]) for r, o in pairs if r["kind"] != "e2e"]
        check(f"throughput not below {k}'s on any row (fixed-rate e2e rows left out)", thr)
    return out
